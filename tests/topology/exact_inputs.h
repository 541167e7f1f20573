// Inputs whose reduction over up to 8 ranks is exactly representable in
// every type (float16 and int8 included), with the closed-form result, and a
// checker that names rank, index, expected and actual.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collective/types.h"
#include "collective/in_tree/half_precision.h"

namespace collective::testing_support {

inline bool is_unsigned(DataType type) { return type == DataType::kUInt8; }

// The value rank `rank` contributes at index `i` for `op`.
inline double input_value(ReduceOp op, DataType type, int rank, std::size_t i) {
  const auto r = static_cast<long long>(rank);
  const auto k = static_cast<long long>(i % 1009);
  switch (op) {
    case ReduceOp::kSum:
      return is_unsigned(type) ? static_cast<double>((k * 7 + r * 3) % 5)
                               : static_cast<double>((k * 7 + r * 3) % 5 - 2);
    case ReduceOp::kMean: return static_cast<double>(k % 7 + 2 * r);
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return is_unsigned(type) ? static_cast<double>((k * 13 + r * 7) % 11)
                               : static_cast<double>((k * 13 + r * 7) % 11 - 5);
    case ReduceOp::kProd: {
      static const double factors[] = {1.0, 2.0, -1.0};
      const double factor = factors[(k + r) % 3];
      return is_unsigned(type) && factor < 0 ? 1.0 : factor;
    }
    // Seven-bit patterns (integer types only): each rank clears one bit
    // (AND) or sets one (OR).
    case ReduceOp::kBitwiseAnd: return static_cast<double>(127 & ~(1 << ((k + r) % 7)));
    case ReduceOp::kBitwiseOr: return static_cast<double>(1 << ((k * 3 + r) % 7));
    case ReduceOp::kBitwiseXor: return static_cast<double>((k * 37 + r * 53) % 128);
  }
  return 0.0;
}

inline double expected_value(ReduceOp op, DataType type, int ranks, std::size_t i) {
  double result = input_value(op, type, 0, i);
  for (int r = 1; r < ranks; ++r) {
    const double v = input_value(op, type, r, i);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean: result += v; break;
      case ReduceOp::kMin: result = v < result ? v : result; break;
      case ReduceOp::kMax: result = v > result ? v : result; break;
      case ReduceOp::kProd: result *= v; break;
      case ReduceOp::kBitwiseAnd: result = static_cast<int>(result) & static_cast<int>(v); break;
      case ReduceOp::kBitwiseOr: result = static_cast<int>(result) | static_cast<int>(v); break;
      case ReduceOp::kBitwiseXor: result = static_cast<int>(result) ^ static_cast<int>(v); break;
    }
  }
  // Integer MEAN truncates toward zero; these sums divide exactly anyway.
  if (op == ReduceOp::kMean) result /= ranks;
  return result;
}

inline void store(DataType type, void* base, std::size_t i, double value) {
  switch (type) {
    case DataType::kFloat16:
      static_cast<std::uint16_t*>(base)[i] =
          ::collective::float_to_float16(static_cast<float>(value));
      break;
    case DataType::kBFloat16:
      static_cast<std::uint16_t*>(base)[i] =
          ::collective::float_to_bfloat16(static_cast<float>(value));
      break;
    case DataType::kFloat32: static_cast<float*>(base)[i] = static_cast<float>(value); break;
    case DataType::kFloat64: static_cast<double*>(base)[i] = value; break;
    case DataType::kInt8:
      static_cast<std::int8_t*>(base)[i] = static_cast<std::int8_t>(value);
      break;
    case DataType::kUInt8:
      static_cast<std::uint8_t*>(base)[i] = static_cast<std::uint8_t>(value);
      break;
    case DataType::kInt32:
      static_cast<std::int32_t*>(base)[i] = static_cast<std::int32_t>(value);
      break;
    case DataType::kInt64:
      static_cast<std::int64_t*>(base)[i] = static_cast<std::int64_t>(value);
      break;
  }
}

inline double load(DataType type, const void* base, std::size_t i) {
  switch (type) {
    case DataType::kFloat16:
      return ::collective::float16_to_float(static_cast<const std::uint16_t*>(base)[i]);
    case DataType::kBFloat16:
      return ::collective::bfloat16_to_float(static_cast<const std::uint16_t*>(base)[i]);
    case DataType::kFloat32: return static_cast<const float*>(base)[i];
    case DataType::kFloat64: return static_cast<const double*>(base)[i];
    case DataType::kInt8: return static_cast<const std::int8_t*>(base)[i];
    case DataType::kUInt8: return static_cast<const std::uint8_t*>(base)[i];
    case DataType::kInt32: return static_cast<const std::int32_t*>(base)[i];
    case DataType::kInt64: return static_cast<double>(static_cast<const std::int64_t*>(base)[i]);
  }
  return 0.0;
}

// `salt` shifts the pattern, so that consecutive calls see different data
// (stale data from an earlier call then shows as wrong values).
inline void fill_inputs(void* base, std::size_t count, DataType type, ReduceOp op, int rank,
                        std::size_t salt = 0) {
  for (std::size_t i = 0; i < count; ++i)
    store(type, base, i, input_value(op, type, rank, i + salt));
}

// Every element; reports the first few mismatches. True when all match.
inline bool check_result(const void* base, std::size_t count, DataType type, ReduceOp op, int ranks,
                         int rank, const std::string& what, std::size_t salt = 0) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double expected = expected_value(op, type, ranks, i + salt);
    const double actual = load(type, base, i);
    if (actual != expected) {
      if (++wrong <= 3) {
        ADD_FAILURE() << what << ": rank " << rank << " index " << i << " of " << count << " ("
                      << to_string(type) << " " << to_string(op) << ") expected " << expected
                      << " got " << actual;
      }
    }
  }
  if (wrong > 3)
    ADD_FAILURE() << what << ": rank " << rank << ": " << wrong << " wrong elements in all";
  return wrong == 0;
}

inline constexpr DataType kAllTypes[] = {
    DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64,
    DataType::kInt8,    DataType::kUInt8,    DataType::kInt32,   DataType::kInt64};
inline constexpr ReduceOp kAllOps[] = {
    ReduceOp::kSum,  ReduceOp::kMean,       ReduceOp::kMin,       ReduceOp::kMax,
    ReduceOp::kProd, ReduceOp::kBitwiseAnd, ReduceOp::kBitwiseOr, ReduceOp::kBitwiseXor};

}  // namespace collective::testing_support
