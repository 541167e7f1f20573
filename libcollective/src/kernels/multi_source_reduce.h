// Reduction of several inputs in one pass, in a fixed order: what each
// owner of a slice does in the shared-memory algorithms. The order is the
// same whoever computes it, so results are bitwise reproducible.
#pragma once

#include <cstddef>

#include "collective/types.h"

namespace collective::internal {

// dst[i] = ((src[0][i] op src[1][i]) op src[2][i]) ... op src[n-1][i].
// float16 and bfloat16 accumulate in float32 and are rounded once, at the
// end. kMean combines as kSum, then divides by `divisor` (> 1) once. dst may
// be one of the sources exactly (not a partial overlap). n >= 1.
void reduce_sources(void* dst, const void* const* sources, int n, std::size_t count, DataType type,
                    ReduceOp op, int divisor);

// The same order for float16 or bfloat16 sources, left as the float32
// accumulator (not rounded, not divided): a partial that another step
// combines further (kernels/float32_partials.h). kMean sums.
void reduce_sources_to_float32(float* dst, const void* const* sources, int n, std::size_t count,
                               DataType type, ReduceOp op);

}  // namespace collective::internal
