// Element-wise arithmetic on raw buffers of any DataType, for the in-process
// reductions of the cross-device ops and the tensor updates of variables and
// optimizers. float16 and bfloat16 are computed in float32 and rounded to
// nearest even once per result; integer sums and products wrap around
// (two's complement), like libcollective's.
#pragma once

#include <string>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "collective/distribute/tensor.h"
#include "collective/types.h"

namespace collective::distribute::detail {

// output[i] = inputs[order[0]][i] op inputs[order[1]][i] op ... (left to
// right), for i in [0, count). kMean sums.
void reduce_in_order(ReduceOp op, DataType type, std::span<const void* const> inputs,
                     std::span<const int> order, void* output, std::size_t count);

// output[i] = pairwise tree over the inputs: ((in0 op in1) op (in2 op in3)) ...
void reduce_as_tree(ReduceOp op, DataType type, std::span<const void* const> inputs, void* output,
                    std::size_t count);

// Ring order: the buffer is cut into inputs.size() chunks; chunk c is
// accumulated starting from input c+1, wrapping around, ending with input c
// (the order a ring reduce-scatter adds in).
void reduce_in_ring_order(ReduceOp op, DataType type, std::span<const void* const> inputs,
                          void* output, std::size_t count);

// buffer[i] /= divisor (kMean's final step): floating types divide in
// floating point, integer types truncate toward zero.
void divide_in_place(DataType type, void* buffer, std::size_t count, std::int64_t divisor);

// target[i] = target[i] + sign * delta[i] (sign is +1 or -1). Same dtype
// and element count (checked by the caller).
void add_in_place(Tensor& target, const Tensor& delta, int sign);

// target[i] -= scale * delta[i] for floating types (InvalidArgumentError for
// integer types): float32 in float32, float64 in float64, float16/bfloat16
// in float32 rounded once.
void subtract_scaled_in_place(Tensor& target, const Tensor& delta, double scale);

// The reduction of value along axis (the axis disappears from the shape).
// kMean sums (the caller divides by the total count).
Tensor reduce_along_axis(ReduceOp op, const Tensor& value, int axis);

// The identity element of op for type (0 for sums, 1 for products, the
// largest value for min, ...), as a tensor of shape.
Tensor identity_tensor(ReduceOp op, DataType type, const Shape& shape);

// Concatenation along axis; every other dimension and the dtype must agree
// (checked by the caller).
Tensor concat(const std::vector<Tensor>& parts, int axis);

// Whether the element type is float16, bfloat16, float32 or float64.
bool is_floating(DataType type);

// Raises InvalidArgumentError (naming `operation` and `rank`) when `op`
// cannot reduce `type`: a bitwise op on a floating type.
void require_op_applies(ReduceOp op, DataType type, const std::string& operation, int rank);

// Whether a reduction of `type` by `op` runs on float32 copies: float16 and
// bfloat16 SUM, MEAN and PROD, whose partial results (a replica's sum, a
// worker's, a sum along an axis) must not be rounded to 16 bits, nor
// MEAN's sum before its division (docs/strategies.md, Numerics).
bool reduces_in_float32(DataType type, ReduceOp op);

// `value` as float32 (exact for float16 and bfloat16).
Tensor widened_to_float32(const Tensor& value);

// A float32 tensor rounded once (to nearest even) to `type`.
Tensor rounded_from_float32(const Tensor& value, DataType type);

}  // namespace collective::distribute::detail
