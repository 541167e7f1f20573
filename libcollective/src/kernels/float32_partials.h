// float16 and bfloat16 reductions whose partial results stay float32: the
// one rule for 16-bit floats (docs/algorithms.md, Numerics). Every partial
// sum or product is kept in float32, MEAN divides the float32 total, and the
// result is rounded to the 16-bit type once, so a partial above the type's
// largest value (3 x 40000 in float16) no longer becomes inf.
#pragma once

#include <cstddef>

#include "collective/types.h"
#include "kernels/reduce_kernels.h"

namespace collective::internal {

// Whether a reduction of `type` by `op` keeps float32 partials: float16 and
// bfloat16 SUM, MEAN and PROD. (MIN and MAX pick an input: nothing to round.)
constexpr bool keeps_float32_partials(DataType type, ReduceOp op) {
  return (type == DataType::kFloat16 || type == DataType::kBFloat16) &&
         (op == ReduceOp::kSum || op == ReduceOp::kMean || op == ReduceOp::kProd);
}

// dst[i] = a[i] op b[i]. `a` holds `type` (float16 or bfloat16); `b` holds
// `type`, or float32 when b_wide. dst is a float32 partial when dst_wide
// (not rounded, no division), else `type`: kMean divides by divisor (> 1)
// before the one rounding. dst may be a or b exactly.
void reduce_into_partial(void* dst, bool dst_wide, const void* a, const void* b, bool b_wide,
                         std::size_t count, DataType type, ReduceOp op, int divisor = 1);

// The same with a chosen instruction set, for tests.
void reduce_into_partial_with(KernelIsa isa, void* dst, bool dst_wide, const void* a, const void* b,
                              bool b_wide, std::size_t count, DataType type, ReduceOp op,
                              int divisor);

// dst[i] = src[i] as float32 (exact).
void widen_to_float32(float* dst, const void* src, std::size_t count, DataType type);

// dst[i] = src[i] / divisor (when divisor > 1) rounded once to `type`.
void round_from_float32(void* dst, const float* src, std::size_t count, DataType type,
                        int divisor = 1);

}  // namespace collective::internal
