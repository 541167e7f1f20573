// Test helpers: buffers of any DataType filled with values whose
// reductions are exactly representable, and element-wise checks that name
// rank, index, expected and actual.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "collective/types.h"
#include "collective/in_tree/half_precision.h"

namespace collective::testing {

class TypedBuffer {
 public:
  TypedBuffer(DataType type, std::size_t count)
      : type_(type), count_(count), bytes_(count * element_size(type) + 64) {}

  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  std::byte* at(std::size_t index) { return bytes_.data() + index * element_size(type_); }
  std::size_t count() const { return count_; }
  DataType type() const { return type_; }

  void set(std::size_t index, double value) { store(type_, bytes_.data(), index, value); }
  double get(std::size_t index) const { return load(type_, bytes_.data(), index); }
  // Fills with a byte pattern that no test value produces.
  void poison() { std::memset(bytes_.data(), 0x5A, bytes_.size()); }

  static void store(DataType type, void* base, std::size_t index, double value) {
    auto* p = static_cast<std::byte*>(base) + index * element_size(type);
    switch (type) {
      case DataType::kFloat16: {
        const std::uint16_t bits = ::collective::float_to_float16(static_cast<float>(value));
        std::memcpy(p, &bits, 2);
        return;
      }
      case DataType::kBFloat16: {
        const std::uint16_t bits = ::collective::float_to_bfloat16(static_cast<float>(value));
        std::memcpy(p, &bits, 2);
        return;
      }
      case DataType::kFloat32: {
        const float v = static_cast<float>(value);
        std::memcpy(p, &v, 4);
        return;
      }
      case DataType::kFloat64: {
        std::memcpy(p, &value, 8);
        return;
      }
      case DataType::kInt8: {
        const auto v = static_cast<std::int8_t>(value);
        std::memcpy(p, &v, 1);
        return;
      }
      case DataType::kUInt8: {
        const auto v = static_cast<std::uint8_t>(value);
        std::memcpy(p, &v, 1);
        return;
      }
      case DataType::kInt32: {
        const auto v = static_cast<std::int32_t>(value);
        std::memcpy(p, &v, 4);
        return;
      }
      case DataType::kInt64: {
        const auto v = static_cast<std::int64_t>(value);
        std::memcpy(p, &v, 8);
        return;
      }
    }
  }

  static double load(DataType type, const void* base, std::size_t index) {
    const auto* p = static_cast<const std::byte*>(base) + index * element_size(type);
    switch (type) {
      case DataType::kFloat16: {
        std::uint16_t b;
        std::memcpy(&b, p, 2);
        return ::collective::float16_to_float(b);
      }
      case DataType::kBFloat16: {
        std::uint16_t b;
        std::memcpy(&b, p, 2);
        return ::collective::bfloat16_to_float(b);
      }
      case DataType::kFloat32: {
        float v;
        std::memcpy(&v, p, 4);
        return v;
      }
      case DataType::kFloat64: {
        double v;
        std::memcpy(&v, p, 8);
        return v;
      }
      case DataType::kInt8: {
        std::int8_t v;
        std::memcpy(&v, p, 1);
        return v;
      }
      case DataType::kUInt8: {
        std::uint8_t v;
        std::memcpy(&v, p, 1);
        return v;
      }
      case DataType::kInt32: {
        std::int32_t v;
        std::memcpy(&v, p, 4);
        return v;
      }
      case DataType::kInt64: {
        std::int64_t v;
        std::memcpy(&v, p, 8);
        return v;
      }
    }
    return 0;
  }

 private:
  DataType type_;
  std::size_t count_;
  std::vector<std::byte> bytes_;
};

inline bool is_signed_type(DataType type) { return type != DataType::kUInt8; }
inline bool is_integer_type(DataType type) {
  return type == DataType::kInt8 || type == DataType::kUInt8 || type == DataType::kInt32 ||
         type == DataType::kInt64;
}

// The value rank `rank` contributes at element `index` for reduction `op`.
// Chosen so that any reduction over up to 4 ranks is exact in every type:
// sums stay within [-20, 40], products within 3^4 = 81 (exact in int8,
// uint8, float16, bfloat16), extremes within [-50, 100].
inline double input_value(ReduceOp op, DataType type, int rank, std::size_t index) {
  const bool is_signed = is_signed_type(type);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean: {
      const double v = static_cast<double>((index * 7 + static_cast<std::size_t>(rank) * 3) % 11);
      return is_signed ? v - 5 : v;
    }
    case ReduceOp::kProd: {
      static constexpr double kSigned[5] = {1, -1, 2, -2, 3};
      static constexpr double kUnsigned[5] = {1, 1, 2, 2, 3};
      const std::size_t k = (index + 2 * static_cast<std::size_t>(rank)) % 5;
      return is_signed ? kSigned[k] : kUnsigned[k];
    }
    case ReduceOp::kMin:
    case ReduceOp::kMax: {
      const double v = static_cast<double>((index * 13 + static_cast<std::size_t>(rank) * 7) % 101);
      return is_signed ? v - 50 : v;
    }
    // Seven-bit patterns (integer types only): AND of ranks that each clear
    // one bit, OR of ranks that each set one, XOR of spread values.
    case ReduceOp::kBitwiseAnd:
      return static_cast<double>(127 & ~(1 << ((index + static_cast<std::size_t>(rank)) % 7)));
    case ReduceOp::kBitwiseOr:
      return static_cast<double>(1 << ((index * 3 + static_cast<std::size_t>(rank)) % 7));
    case ReduceOp::kBitwiseXor:
      return static_cast<double>((index * 37 + static_cast<std::size_t>(rank) * 53) % 128);
  }
  return 0;
}

// The exact reduction over ranks 0..size-1 at `index`, as the library
// defines it (MEAN: sum then divide; float16/bfloat16 divide in float32;
// integers truncate toward zero).
inline double expected_value(ReduceOp op, DataType type, int size, std::size_t index) {
  double acc = input_value(op, type, 0, index);
  for (int r = 1; r < size; ++r) {
    const double v = input_value(op, type, r, index);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean: acc += v; break;
      case ReduceOp::kProd: acc *= v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kBitwiseAnd: acc = static_cast<int>(acc) & static_cast<int>(v); break;
      case ReduceOp::kBitwiseOr: acc = static_cast<int>(acc) | static_cast<int>(v); break;
      case ReduceOp::kBitwiseXor: acc = static_cast<int>(acc) ^ static_cast<int>(v); break;
    }
  }
  if (op != ReduceOp::kMean) return acc;
  if (is_integer_type(type)) return std::trunc(acc / size);
  if (type == DataType::kFloat64) return acc / size;
  // float32 arithmetic, then the storage type's rounding.
  const float mean = static_cast<float>(acc) / static_cast<float>(size);
  std::byte rounded[8];
  TypedBuffer::store(type, rounded, 0, mean);
  return TypedBuffer::load(type, rounded, 0);
}

// input_value, and so expected_value, repeat along the index with this
// period (the moduli above): the helpers below work a period at a time,
// which keeps sweeps over millions of elements quick.
inline std::size_t value_period(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean: return 11;
    case ReduceOp::kProd: return 5;
    case ReduceOp::kMin:
    case ReduceOp::kMax: return 101;
    case ReduceOp::kBitwiseAnd:
    case ReduceOp::kBitwiseOr: return 7;
    case ReduceOp::kBitwiseXor: return 128;
  }
  return 1;
}

// Elements the periodic helpers convert once and then copy or compare
// along: whole periods, at least a few thousand elements (short periods
// would otherwise mean one tiny memcpy per period).
inline std::size_t periodic_block(std::size_t period, std::size_t count) {
  const std::size_t periods = std::max<std::size_t>(1, 4096 / period);
  return std::min(period * periods, count);
}

// Sets elements offset .. offset+count-1 to value(0) .. value(count-1), for
// a value(i) that repeats every `period` indices: one block of whole periods
// is converted, then copied along.
template <typename Value>
void fill_periodic(TypedBuffer& buffer, std::size_t offset, std::size_t count, std::size_t period,
                   Value value) {
  const std::size_t element = element_size(buffer.type());
  const std::size_t block = periodic_block(period, count);
  TypedBuffer pattern(buffer.type(), block);
  for (std::size_t i = 0; i < block; ++i) pattern.set(i, value(i));
  for (std::size_t first = 0; first < count; first += block) {
    const std::size_t length = std::min(block, count - first);
    std::memcpy(buffer.at(offset + first), pattern.data(), length * element);
  }
}

// Compares every element; reports up to 5 mismatches and the total, each
// naming rank, index, expected and actual.
template <typename Expected>
::testing::AssertionResult check_elements(const TypedBuffer& actual, std::size_t offset,
                                          std::size_t count, int rank, Expected expected) {
  std::ostringstream report;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double want = expected(i);
    const double got = actual.get(offset + i);
    const bool equal = (std::isnan(want) && std::isnan(got)) || want == got;
    if (!equal) {
      if (wrong < 5) {
        report << "\n  rank " << rank << " index " << i << ": expected " << want << ", actual "
               << got;
      }
      ++wrong;
    }
  }
  if (wrong == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << wrong << " of " << count << " elements wrong" << report.str();
}

// check_elements for an expected(i) that repeats every `period` indices:
// compares the bytes a block of whole periods at a time against the expected
// values' encoding, and hands over to check_elements (same verdict, same
// report) when any differ or when an expected value has no exact encoding.
template <typename Expected>
::testing::AssertionResult check_periodic(const TypedBuffer& actual, std::size_t offset,
                                          std::size_t count, int rank, std::size_t period,
                                          Expected expected) {
  const std::size_t element = element_size(actual.type());
  const std::size_t block = periodic_block(period, count);
  TypedBuffer pattern(actual.type(), block);
  for (std::size_t i = 0; i < block; ++i) {
    const double want = expected(i);
    pattern.set(i, want);
    if (!(pattern.get(i) == want)) return check_elements(actual, offset, count, rank, expected);
  }
  const auto* bytes = static_cast<const std::byte*>(actual.data());
  for (std::size_t first = 0; first < count; first += block) {
    const std::size_t length = std::min(block, count - first);
    if (std::memcmp(bytes + (offset + first) * element, pattern.data(), length * element) != 0) {
      return check_elements(actual, offset, count, rank, expected);
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace collective::testing
