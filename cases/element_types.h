// How the benchmark reads and writes elements of each DataType. Values go
// in as small integers (exact in every type, float16 and bfloat16 included)
// and come back as the storage value itself, so checks compare exactly.
#pragma once

#include <cstdint>
#include <utility>

#include "collective/types.h"
#include "collective/in_tree/half_precision.h"

namespace collective::cases {

template <typename StorageType, bool Floating, bool Signed>
struct ElementBase {
  using Storage = StorageType;
  static constexpr bool kFloating = Floating;
  static constexpr bool kSigned = Signed;
};

template <DataType Type>
struct Element;

template <>
struct Element<DataType::kFloat16> : ElementBase<std::uint16_t, true, true> {
  static Storage from_double(double v) { return float_to_float16(static_cast<float>(v)); }
  static double to_double(Storage s) { return float16_to_float(s); }
};
template <>
struct Element<DataType::kBFloat16> : ElementBase<std::uint16_t, true, true> {
  static Storage from_double(double v) { return float_to_bfloat16(static_cast<float>(v)); }
  static double to_double(Storage s) { return bfloat16_to_float(s); }
};
template <>
struct Element<DataType::kFloat32> : ElementBase<float, true, true> {
  static Storage from_double(double v) { return static_cast<float>(v); }
  static double to_double(Storage s) { return s; }
};
template <>
struct Element<DataType::kFloat64> : ElementBase<double, true, true> {
  static Storage from_double(double v) { return v; }
  static double to_double(Storage s) { return s; }
};
template <>
struct Element<DataType::kInt8> : ElementBase<std::int8_t, false, true> {};
template <>
struct Element<DataType::kUInt8> : ElementBase<std::uint8_t, false, false> {};
template <>
struct Element<DataType::kInt32> : ElementBase<std::int32_t, false, true> {};
template <>
struct Element<DataType::kInt64> : ElementBase<std::int64_t, false, true> {};

// Calls f(Element<T>{}) for the runtime type.
template <typename F>
decltype(auto) visit_type(DataType type, F&& f) {
  switch (type) {
    case DataType::kFloat16: return std::forward<F>(f)(Element<DataType::kFloat16>{});
    case DataType::kBFloat16: return std::forward<F>(f)(Element<DataType::kBFloat16>{});
    case DataType::kFloat32: return std::forward<F>(f)(Element<DataType::kFloat32>{});
    case DataType::kFloat64: return std::forward<F>(f)(Element<DataType::kFloat64>{});
    case DataType::kInt8: return std::forward<F>(f)(Element<DataType::kInt8>{});
    case DataType::kUInt8: return std::forward<F>(f)(Element<DataType::kUInt8>{});
    case DataType::kInt32: return std::forward<F>(f)(Element<DataType::kInt32>{});
    case DataType::kInt64: return std::forward<F>(f)(Element<DataType::kInt64>{});
  }
  return std::forward<F>(f)(Element<DataType::kFloat32>{});
}

}  // namespace collective::cases
