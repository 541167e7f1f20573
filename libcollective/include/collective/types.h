// Element types and reduction operations understood by every collective.
#pragma once

#include "collective/export.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace collective {

// Element type of a buffer. float16 and bfloat16 are stored as 16-bit
// patterns and reduced in float32 (see docs/algorithms.md, "Numerics").
enum class DataType : int {
  kFloat16 = 0,
  kBFloat16,
  kFloat32,
  kFloat64,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
};
inline constexpr int kNumDataTypes = 8;

// Reduction applied element-wise across ranks.
//   kMean: the SUM divided by the number of ranks. Floating types divide in
//          floating point (fp16/bf16 in float32). Integer types divide the
//          SUM (which wraps around on overflow, as SUM does) by the number of
//          ranks with truncation toward zero, like tf.math.reduce_mean.
//   kMin/kMax: a NaN in any input gives NaN.
//   kBitwiseAnd/Or/Xor: on the bits of integer types only (MPI_BAND,
//          MPI_BOR, MPI_BXOR; torch's BAND, BOR, BXOR); a floating type is
//          an InvalidArgumentError.
enum class ReduceOp : int {
  kSum = 0,
  kMean,
  kMin,
  kMax,
  kProd,
  kBitwiseAnd,
  kBitwiseOr,
  kBitwiseXor,
};
inline constexpr int kNumReduceOps = 8;

// Whether `op` combines bits and so applies to integer types only.
constexpr bool is_bitwise(ReduceOp op) {
  return op == ReduceOp::kBitwiseAnd || op == ReduceOp::kBitwiseOr || op == ReduceOp::kBitwiseXor;
}

constexpr bool is_integer(DataType type) {
  return type == DataType::kInt8 || type == DataType::kUInt8 || type == DataType::kInt32 ||
         type == DataType::kInt64;
}

// Whether `op` can reduce elements of `type` (what the calls check).
constexpr bool op_applies_to(ReduceOp op, DataType type) {
  return !is_bitwise(op) || is_integer(type);
}

// Bytes per element; throws InvalidArgumentError for a value outside the enum.
COLLECTIVE_API std::size_t element_size(DataType type);

// Canonical lower-case names: "float16", "bfloat16", "float32", "float64",
// "int8", "uint8", "int32", "int64"; "sum", "mean", "min", "max", "prod",
// "band", "bor", "bxor".
COLLECTIVE_API std::string_view to_string(DataType type);
COLLECTIVE_API std::string_view to_string(ReduceOp op);

// Parse a name (canonical names and common aliases such as "half", "bf16",
// "float", "double", "int"); std::nullopt when unknown.
COLLECTIVE_API std::optional<DataType> parse_data_type(std::string_view name);
COLLECTIVE_API std::optional<ReduceOp> parse_reduce_op(std::string_view name);

// Maps a C++ element type to its DataType (for the typed convenience calls).
template <typename T>
struct DataTypeOf;
template <>
struct DataTypeOf<float> {
  static constexpr DataType value = DataType::kFloat32;
};
template <>
struct DataTypeOf<double> {
  static constexpr DataType value = DataType::kFloat64;
};
template <>
struct DataTypeOf<std::int8_t> {
  static constexpr DataType value = DataType::kInt8;
};
template <>
struct DataTypeOf<std::uint8_t> {
  static constexpr DataType value = DataType::kUInt8;
};
template <>
struct DataTypeOf<std::int32_t> {
  static constexpr DataType value = DataType::kInt32;
};
template <>
struct DataTypeOf<std::int64_t> {
  static constexpr DataType value = DataType::kInt64;
};

}  // namespace collective
