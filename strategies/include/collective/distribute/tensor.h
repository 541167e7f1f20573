// A dense host tensor: an element type, a shape and the bytes. Deliberately
// small: the strategies layer moves, reduces, slices and concatenates
// tensors; models compute on them through values<T>().
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collective/types.h"

namespace collective::distribute {

// Dimensions, outermost first. {} is a scalar (one element).
using Shape = std::vector<std::int64_t>;

// "[2, 3]"; "[]" for a scalar.
std::string shape_string(const Shape& shape);

// Product of the dimensions (0 when any is 0). InvalidArgumentError naming
// the shape on a negative dimension, or when the product exceeds 2^63 - 1.
std::size_t num_elements(const Shape& shape);
// The bytes of a tensor of this shape and dtype. InvalidArgumentError naming
// both when they exceed PTRDIFF_MAX, the largest object a process can hold.
std::size_t num_bytes(const Shape& shape, DataType dtype);

namespace detail {

// A tensor's bytes: 64-byte aligned, copied when copied. Blocks of 64 KiB
// and more come from and go back to the process's tensor block cache
// (tensor_storage.cc, COLLECTIVE_TENSOR_CACHE_BYTES), so the tensors of
// every training step reuse memory that is already mapped instead of
// faulting in fresh pages, which costs more than the step's all-reduce.
class TensorStorage {
 public:
  TensorStorage() noexcept = default;
  // bytes of unspecified contents.
  explicit TensorStorage(std::size_t bytes);
  TensorStorage(const TensorStorage& other);
  TensorStorage& operator=(const TensorStorage& other);
  TensorStorage(TensorStorage&& other) noexcept;
  TensorStorage& operator=(TensorStorage&& other) noexcept;
  ~TensorStorage();

  std::byte* data() noexcept { return data_; }
  const std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  void release() noexcept;

  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;  // of the block, which a cached one may make larger
};

struct TensorAccess;  // internal: tensors whose every byte the caller writes

}  // namespace detail

// Value semantics: copying a Tensor copies its bytes. A Tensor is not
// synchronized; share one between threads only for reading.
class Tensor {
 public:
  // A float32 scalar 0.
  Tensor();

  // Zero-filled (all bytes 0: +0.0 for floating types).
  Tensor(DataType dtype, Shape shape);

  // Takes the values; values.size() must equal the number of elements of
  // shape (InvalidArgumentError otherwise).
  template <typename T>
  Tensor(std::vector<T> values, Shape shape);

  // A scalar of the element type of T.
  template <typename T>
  static Tensor scalar(T value) {
    return Tensor(std::vector<T>{value}, Shape{});
  }

  // Any DataType from doubles: converts each value (float16/bfloat16 round
  // to nearest even; integer types truncate toward zero).
  static Tensor from_doubles(DataType dtype, const std::vector<double>& values, Shape shape);

  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  std::int64_t dim(int axis) const;
  std::size_t num_elements() const { return num_elements_; }
  std::size_t num_bytes() const { return bytes_.size(); }

  void* raw_data() { return bytes_.data(); }
  const void* raw_data() const { return bytes_.data(); }

  // Typed views; InvalidArgumentError when T is not this tensor's type.
  // float16 and bfloat16 are viewed as their 16-bit patterns (std::uint16_t).
  template <typename T>
  std::span<T> values();
  template <typename T>
  std::span<const T> values() const;

  // Every element converted to double (exact for all types but int64
  // beyond 2^53).
  std::vector<double> to_doubles() const;

  // Same bytes, another shape with the same number of elements.
  Tensor reshape(Shape shape) const;

  // Same dtype, shape and bytes (bitwise; NaN payloads included).
  bool identical(const Tensor& other) const;

  // "Tensor(float32, [2, 3])".
  std::string debug_string() const;

 private:
  friend struct detail::TensorAccess;
  struct Uninitialized {};
  // Every byte is written by the caller before the tensor is read.
  Tensor(DataType dtype, Shape shape, Uninitialized);

  void check_view(DataType requested) const;
  void check_count(std::size_t given) const;

  DataType dtype_;
  Shape shape_;
  std::size_t num_elements_;
  detail::TensorStorage bytes_;
};

namespace detail {
template <typename T>
struct TensorElement;
template <>
struct TensorElement<float> {
  static constexpr DataType kType = DataType::kFloat32;
};
template <>
struct TensorElement<double> {
  static constexpr DataType kType = DataType::kFloat64;
};
template <>
struct TensorElement<std::int8_t> {
  static constexpr DataType kType = DataType::kInt8;
};
template <>
struct TensorElement<std::uint8_t> {
  static constexpr DataType kType = DataType::kUInt8;
};
template <>
struct TensorElement<std::int32_t> {
  static constexpr DataType kType = DataType::kInt32;
};
template <>
struct TensorElement<std::int64_t> {
  static constexpr DataType kType = DataType::kInt64;
};
// 16-bit patterns: float16 or bfloat16 (views accept either).
template <>
struct TensorElement<std::uint16_t> {
  static constexpr DataType kType = DataType::kFloat16;
};
}  // namespace detail

template <typename T>
Tensor::Tensor(std::vector<T> values, Shape shape)
    : Tensor(detail::TensorElement<T>::kType, std::move(shape), Uninitialized{}) {
  check_count(values.size());
  std::span<T> destination = this->values<T>();
  for (std::size_t i = 0; i < values.size(); ++i) destination[i] = values[i];
}

template <typename T>
std::span<T> Tensor::values() {
  check_view(detail::TensorElement<T>::kType);
  return {reinterpret_cast<T*>(bytes_.data()), num_elements_};
}

template <typename T>
std::span<const T> Tensor::values() const {
  check_view(detail::TensorElement<T>::kType);
  return {reinterpret_cast<const T*>(bytes_.data()), num_elements_};
}

}  // namespace collective::distribute
