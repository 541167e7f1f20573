#include "buffer_view.h"

#include <string_view>

#include "collective/errors.h"

namespace collective::python {
namespace {

namespace py = pybind11;

// The struct-module format of one element, its byte-order prefix dropped
// ('=' '<' '@'; this library runs on little-endian machines only).
std::string_view element_format(const std::string& format) {
  std::string_view f = format;
  while (!f.empty() && (f.front() == '=' || f.front() == '<' || f.front() == '@')) {
    f.remove_prefix(1);
  }
  return f;
}

std::optional<DataType> type_of_format(std::string_view format, std::size_t itemsize) {
  if (format.size() != 1) return std::nullopt;
  switch (format.front()) {
    case 'e': return DataType::kFloat16;
    case 'f': return DataType::kFloat32;
    case 'd': return DataType::kFloat64;
    case 'b': return DataType::kInt8;
    case 'B': return DataType::kUInt8;
    case 'h':
    case 'i':
    case 'l':
    case 'q':
      if (itemsize == 4) return DataType::kInt32;
      if (itemsize == 8) return DataType::kInt64;
      return std::nullopt;
    default: return std::nullopt;
  }
}

bool c_contiguous(const py::buffer_info& info) {
  py::ssize_t expected = info.itemsize;
  for (py::ssize_t axis = info.ndim - 1; axis >= 0; --axis) {
    const auto extent = info.shape[static_cast<std::size_t>(axis)];
    if (extent > 1 && info.strides[static_cast<std::size_t>(axis)] != expected) return false;
    expected *= extent;
  }
  return true;
}

}  // namespace

DataType parse_data_type(const std::string& name, const std::string& operation, int rank) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    const auto type = static_cast<DataType>(i);
    if (to_string(type) == name) return type;
  }
  throw InvalidArgumentError(operation, rank,
                             "dtype '" + name +
                                 "' is not one of float16, bfloat16, float32, float64, int8, "
                                 "uint8, int32, int64");
}

BufferView view_of(const py::handle& object, const std::string& operation, int rank,
                   const char* argument, bool writable, std::optional<DataType> declared) {
  BufferView view;
  try {
    view.info = py::reinterpret_borrow<py::buffer>(object).request(false);
  } catch (const py::error_already_set&) {
    throw InvalidArgumentError(operation, rank,
                               std::string(argument) + " (a " +
                                   std::string(py::str(object.get_type().attr("__name__"))) +
                                   ") does not support the buffer protocol (give a numpy array, "
                                   "memoryview, array.array or bytearray)");
  }
  const py::buffer_info& info = view.info;
  if (writable && info.readonly) {
    throw InvalidArgumentError(operation, rank, std::string(argument) + " is read-only");
  }
  if (!c_contiguous(info)) {
    throw InvalidArgumentError(operation, rank,
                               std::string(argument) +
                                   " is not C-contiguous (pass numpy.ascontiguousarray(x), or a "
                                   "contiguous slice): the library reads and writes it in place");
  }
  const auto itemsize = static_cast<std::size_t>(info.itemsize);
  if (declared) {
    if (element_size(*declared) != itemsize) {
      throw InvalidArgumentError(operation, rank,
                                 std::string(argument) + " has " + std::to_string(itemsize) +
                                     "-byte elements but dtype " +
                                     std::string(to_string(*declared)) + " has " +
                                     std::to_string(element_size(*declared)));
    }
    view.type = *declared;
  } else if (const auto inferred = type_of_format(element_format(info.format), itemsize)) {
    view.type = *inferred;
  } else {
    throw InvalidArgumentError(operation, rank,
                               std::string(argument) + " has elements of format '" + info.format +
                                   "' (" + std::to_string(itemsize) +
                                   " bytes), which the library does not reduce: float16, float32, "
                                   "float64, int8, uint8, int32, int64, or bfloat16 by dtype=");
  }
  view.data = info.ptr;
  view.count = static_cast<std::size_t>(info.size);
  return view;
}

}  // namespace collective::python
