// Test values of every DataType, handled as doubles: the GPU tests fill
// buffers from closed-form patterns and check every element against the
// closed-form result, in the library's own arithmetic (docs/algorithms.md,
// "Numerics").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "collective/types.h"
#include "kernels/half_precision.h"

namespace collective::test {

// Stores `value` (exactly representable in `type` in these tests) at
// element `index` of `buffer`.
inline void store(std::byte* buffer, std::size_t index, DataType type, double value) {
  std::byte* at = buffer + index * element_size(type);
  auto put = [&](auto typed) { std::memcpy(at, &typed, sizeof(typed)); };
  switch (type) {
    case DataType::kFloat16: put(internal::float_to_half_bits(static_cast<float>(value))); break;
    case DataType::kBFloat16: put(internal::float_to_bfloat16_bits(static_cast<float>(value))); break;
    case DataType::kFloat32: put(static_cast<float>(value)); break;
    case DataType::kFloat64: put(value); break;
    case DataType::kInt8: put(static_cast<std::int8_t>(value)); break;
    case DataType::kUInt8: put(static_cast<std::uint8_t>(value)); break;
    case DataType::kInt32: put(static_cast<std::int32_t>(value)); break;
    case DataType::kInt64: put(static_cast<std::int64_t>(value)); break;
  }
}

inline double load(const std::byte* buffer, std::size_t index, DataType type) {
  const std::byte* at = buffer + index * element_size(type);
  auto get = [&](auto typed) {
    std::memcpy(&typed, at, sizeof(typed));
    return typed;
  };
  switch (type) {
    case DataType::kFloat16: return internal::half_bits_to_float(get(std::uint16_t{}));
    case DataType::kBFloat16: return internal::bfloat16_bits_to_float(get(std::uint16_t{}));
    case DataType::kFloat32: return get(float{});
    case DataType::kFloat64: return get(double{});
    case DataType::kInt8: return get(std::int8_t{});
    case DataType::kUInt8: return get(std::uint8_t{});
    case DataType::kInt32: return get(std::int32_t{});
    case DataType::kInt64: return static_cast<double>(get(std::int64_t{}));
  }
  return 0;
}

inline bool is_integer(DataType type) {
  return type == DataType::kInt8 || type == DataType::kUInt8 || type == DataType::kInt32 ||
         type == DataType::kInt64;
}

// The input of `rank` at `index` for `op`: small non-negative integers, so
// that sums (up to 4 ranks), products and MIN/MAX are exact in every type.
inline double input_value(ReduceOp op, int rank, std::size_t index) {
  const auto i = static_cast<long long>(index % 1000003);
  switch (op) {
    case ReduceOp::kProd: return static_cast<double>((i + rank) % 2 + 1);
    case ReduceOp::kMin:
    case ReduceOp::kMax: return static_cast<double>((i * 3 + rank * 5) % 11);
    default: return static_cast<double>((i * 7 + rank * 3) % 5 + 1);
  }
}

// The library's MEAN of an exact integer sum over `ranks`: integers truncate
// toward zero, float16/bfloat16 divide in float32 and round once.
inline double mean_of_sum(double sum, int ranks, DataType type) {
  switch (type) {
    case DataType::kFloat64: return sum / ranks;
    case DataType::kFloat32: return static_cast<float>(sum) / static_cast<float>(ranks);
    case DataType::kFloat16:
      return internal::half_bits_to_float(
          internal::float_to_half_bits(static_cast<float>(sum) / static_cast<float>(ranks)));
    case DataType::kBFloat16:
      return internal::bfloat16_bits_to_float(
          internal::float_to_bfloat16_bits(static_cast<float>(sum) / static_cast<float>(ranks)));
    default: return std::trunc(sum / ranks);
  }
}

// The reduction over `ranks` ranks of input_value at `index`.
inline double expected_value(ReduceOp op, int ranks, std::size_t index, DataType type) {
  double result = input_value(op, 0, index);
  for (int r = 1; r < ranks; ++r) {
    const double x = input_value(op, r, index);
    switch (op) {
      case ReduceOp::kProd: result *= x; break;
      case ReduceOp::kMin: result = std::min(result, x); break;
      case ReduceOp::kMax: result = std::max(result, x); break;
      default: result += x; break;
    }
  }
  return op == ReduceOp::kMean ? mean_of_sum(result, ranks, type) : result;
}

inline std::vector<std::byte> filled(ReduceOp op, int rank, std::size_t count, DataType type) {
  std::vector<std::byte> buffer(count * element_size(type));
  for (std::size_t i = 0; i < count; ++i) store(buffer.data(), i, type, input_value(op, rank, i));
  return buffer;
}

}  // namespace collective::test
