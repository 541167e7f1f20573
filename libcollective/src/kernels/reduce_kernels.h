// Element-wise reduction of two buffers: the arithmetic at the heart of
// every reducing collective. Vectorized; the AVX2+F16C variant is chosen at
// run time where the processor has it (COLLECTIVE_KERNELS=generic forces the
// portable one).
#pragma once

#include <cstddef>

#include "collective/types.h"

namespace collective::internal {

enum class KernelIsa { kGeneric, kAvx2 };

// dst[i] = a[i] op b[i], for i < count. dst may be a or b (exactly), never a
// partial overlap. kMean combines as kSum; when divisor > 1 the combined
// value is then divided by divisor (the last step of a MEAN). float16 and
// bfloat16 are computed in float32 and rounded once per call.
void reduce_buffers(void* dst, const void* a, const void* b, std::size_t count, DataType type,
                    ReduceOp op, int divisor = 1);

// buffer[i] /= divisor, in the type's MEAN arithmetic (see types.h).
void divide_buffer(void* buffer, std::size_t count, DataType type, int divisor);

// The same with a chosen instruction set, for tests and the benchmark.
void reduce_buffers_with(KernelIsa isa, void* dst, const void* a, const void* b, std::size_t count,
                         DataType type, ReduceOp op, int divisor);

KernelIsa active_kernel_isa();
bool kernel_isa_available(KernelIsa isa);
const char* to_string(KernelIsa isa);

}  // namespace collective::internal
