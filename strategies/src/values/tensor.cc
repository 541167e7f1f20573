#include "collective/distribute/tensor.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "collective/errors.h"
#include "collective/in_tree/half_precision.h"

namespace collective::distribute {

std::string shape_string(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

std::size_t num_elements(const Shape& shape) {
  bool empty = false;
  for (std::int64_t dim : shape) {
    if (dim < 0) {
      throw InvalidArgumentError("Tensor", -1,
                                 "shape " + shape_string(shape) + " has a negative dimension");
    }
    empty = empty || dim == 0;
  }
  if (empty) return 0;
  // Checked: a product that wrapped (1 << 62 float32s, [2^40, 2^40]) gave a
  // 0-byte tensor that the first write overran.
  std::int64_t count = 1;
  for (std::int64_t dim : shape) {
    if (__builtin_mul_overflow(count, dim, &count)) {
      throw InvalidArgumentError(
          "Tensor", -1,
          "shape " + shape_string(shape) + " has more elements than an int64 can count (2^63 - 1)");
    }
  }
  return static_cast<std::size_t>(count);
}

std::size_t num_bytes(const Shape& shape, DataType dtype) {
  const std::size_t elements = num_elements(shape);
  const std::size_t size = element_size(dtype);
  constexpr auto kLargestObject = static_cast<std::size_t>(PTRDIFF_MAX);
  if (elements > kLargestObject / size) {
    throw InvalidArgumentError("Tensor", -1,
                               std::string(to_string(dtype)) + " shape " + shape_string(shape) +
                                   " has " + std::to_string(elements) + " elements of " +
                                   std::to_string(size) + " bytes, more than the " +
                                   std::to_string(kLargestObject) + " bytes a process can address");
  }
  return elements * size;
}

Tensor::Tensor() : Tensor(DataType::kFloat32, Shape{}) {}

Tensor::Tensor(DataType dtype, Shape shape, Uninitialized)
    : dtype_(dtype),
      shape_(std::move(shape)),
      num_elements_(distribute::num_elements(shape_)),
      bytes_(distribute::num_bytes(shape_, dtype)) {}

Tensor::Tensor(DataType dtype, Shape shape) : Tensor(dtype, std::move(shape), Uninitialized{}) {
  if (bytes_.size() > 0) std::memset(bytes_.data(), 0, bytes_.size());
}

std::int64_t Tensor::dim(int axis) const {
  if (axis < 0 || axis >= rank()) {
    throw InvalidArgumentError(
        "Tensor::dim", -1,
        "axis " + std::to_string(axis) + " is out of range for shape " + shape_string(shape_));
  }
  return shape_[static_cast<std::size_t>(axis)];
}

void Tensor::check_view(DataType requested) const {
  const bool sixteen_bit = requested == DataType::kFloat16 &&
                           (dtype_ == DataType::kFloat16 || dtype_ == DataType::kBFloat16);
  if (requested != dtype_ && !sixteen_bit) {
    throw InvalidArgumentError("Tensor::values", -1,
                               "viewed as " + std::string(to_string(requested)) + " but it holds " +
                                   std::string(to_string(dtype_)));
  }
}

void Tensor::check_count(std::size_t given) const {
  if (given != num_elements_) {
    throw InvalidArgumentError("Tensor", -1,
                               std::to_string(given) + " values given for shape " +
                                   shape_string(shape_) + " (" + std::to_string(num_elements_) +
                                   " elements)");
  }
}

Tensor Tensor::from_doubles(DataType dtype, const std::vector<double>& values, Shape shape) {
  Tensor result(dtype, std::move(shape));
  result.check_count(values.size());
  void* data = result.raw_data();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    switch (dtype) {
      case DataType::kFloat16:
        static_cast<std::uint16_t*>(data)[i] =
            ::collective::float_to_float16(static_cast<float>(v));
        break;
      case DataType::kBFloat16:
        static_cast<std::uint16_t*>(data)[i] =
            ::collective::float_to_bfloat16(static_cast<float>(v));
        break;
      case DataType::kFloat32: static_cast<float*>(data)[i] = static_cast<float>(v); break;
      case DataType::kFloat64: static_cast<double*>(data)[i] = v; break;
      case DataType::kInt8: static_cast<std::int8_t*>(data)[i] = static_cast<std::int8_t>(v); break;
      case DataType::kUInt8:
        static_cast<std::uint8_t*>(data)[i] = static_cast<std::uint8_t>(v);
        break;
      case DataType::kInt32:
        static_cast<std::int32_t*>(data)[i] = static_cast<std::int32_t>(v);
        break;
      case DataType::kInt64:
        static_cast<std::int64_t*>(data)[i] = static_cast<std::int64_t>(v);
        break;
    }
  }
  return result;
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<double> result(num_elements_);
  const void* data = raw_data();
  for (std::size_t i = 0; i < num_elements_; ++i) {
    switch (dtype_) {
      case DataType::kFloat16:
        result[i] = ::collective::float16_to_float(static_cast<const std::uint16_t*>(data)[i]);
        break;
      case DataType::kBFloat16:
        result[i] = ::collective::bfloat16_to_float(static_cast<const std::uint16_t*>(data)[i]);
        break;
      case DataType::kFloat32: result[i] = static_cast<const float*>(data)[i]; break;
      case DataType::kFloat64: result[i] = static_cast<const double*>(data)[i]; break;
      case DataType::kInt8: result[i] = static_cast<const std::int8_t*>(data)[i]; break;
      case DataType::kUInt8: result[i] = static_cast<const std::uint8_t*>(data)[i]; break;
      case DataType::kInt32: result[i] = static_cast<const std::int32_t*>(data)[i]; break;
      case DataType::kInt64:
        result[i] = static_cast<double>(static_cast<const std::int64_t*>(data)[i]);
        break;
    }
  }
  return result;
}

Tensor Tensor::reshape(Shape shape) const {
  if (distribute::num_elements(shape) != num_elements_) {
    throw InvalidArgumentError("Tensor::reshape", -1,
                               "cannot reshape " + shape_string(shape_) + " (" +
                                   std::to_string(num_elements_) + " elements) to " +
                                   shape_string(shape));
  }
  Tensor result = *this;
  result.shape_ = std::move(shape);
  return result;
}

bool Tensor::identical(const Tensor& other) const {
  return dtype_ == other.dtype_ && shape_ == other.shape_ && bytes_.size() == other.bytes_.size() &&
         (bytes_.size() == 0 ||
          std::memcmp(bytes_.data(), other.bytes_.data(), bytes_.size()) == 0);
}

std::string Tensor::debug_string() const {
  return "Tensor(" + std::string(to_string(dtype_)) + ", " + shape_string(shape_) + ")";
}

}  // namespace collective::distribute
