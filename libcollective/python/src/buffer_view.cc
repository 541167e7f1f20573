#include "buffer_view.h"

#include <cstdint>
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

// A dtype declared for elements of `itemsize` bytes: its size must match.
DataType checked_declared(DataType declared, std::size_t itemsize, const std::string& what,
                          const std::string& operation, int rank) {
  if (element_size(declared) != itemsize) {
    throw InvalidArgumentError(operation, rank,
                               what + " has " + std::to_string(itemsize) +
                                   "-byte elements but dtype " + std::string(to_string(declared)) +
                                   " has " + std::to_string(element_size(declared)));
  }
  return declared;
}

// DLPack's C structures (dlpack.h, ABI 0.x, as torch 1.13 exports them):
// the exchange is a capsule named "dltensor" holding a DLManagedTensor,
// renamed "used_dltensor" by the consumer, which calls its deleter when
// done with the memory.
struct DLDevice {
  std::int32_t device_type;  // 1: CPU, 3: CUDA host (pinned) memory
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;  // 0 int, 1 uint, 2 float, 4 bfloat
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements; null: compact, row-major
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_context;
  void (*deleter)(DLManagedTensor* self);
};

constexpr std::int32_t kDLCPU = 1;
constexpr std::int32_t kDLCUDAHost = 3;

std::optional<DataType> type_of_dlpack(const DLDataType& dtype) {
  if (dtype.lanes != 1) return std::nullopt;
  switch (dtype.code) {
    case 0:
      if (dtype.bits == 8) return DataType::kInt8;
      if (dtype.bits == 32) return DataType::kInt32;
      if (dtype.bits == 64) return DataType::kInt64;
      return std::nullopt;
    case 1: return dtype.bits == 8 ? std::optional(DataType::kUInt8) : std::nullopt;
    case 2:
      if (dtype.bits == 16) return DataType::kFloat16;
      if (dtype.bits == 32) return DataType::kFloat32;
      if (dtype.bits == 64) return DataType::kFloat64;
      return std::nullopt;
    case 4: return dtype.bits == 16 ? std::optional(DataType::kBFloat16) : std::nullopt;
    default: return std::nullopt;
  }
}

std::string type_name_of(const py::handle& object) {
  return py::str(object.get_type().attr("__name__"));
}

BufferView dlpack_view(const py::handle& object, const std::string& operation, int rank,
                       const char* argument, std::optional<DataType> declared) {
  const std::string what = std::string(argument) + " (a " + type_name_of(object) + ")";
  py::object capsule;
  try {
    capsule = object.attr("__dlpack__")();
  } catch (const py::error_already_set& error) {
    // The exception's type and text (what() appends a traceback).
    throw InvalidArgumentError(operation, rank,
                               what + ": its __dlpack__() raised " +
                                   std::string(py::str(error.type().attr("__name__"))) + ": " +
                                   std::string(py::str(error.value())));
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) {
    PyErr_Clear();
    throw InvalidArgumentError(operation, rank,
                               what + ": its __dlpack__() did not return an unused DLPack capsule");
  }
  // Consumed: the capsule no longer frees it; the view calls its deleter.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  BufferView view;
  view.dlpack = std::shared_ptr<void>(managed, [](void* tensor) {
    auto* held = static_cast<DLManagedTensor*>(tensor);
    if (held->deleter != nullptr) held->deleter(held);
  });
  const DLTensor& tensor = managed->dl_tensor;
  if (tensor.device.device_type != kDLCPU && tensor.device.device_type != kDLCUDAHost) {
    throw InvalidArgumentError(operation, rank,
                               what + " is in device memory (DLPack device type " +
                                   std::to_string(tensor.device.device_type) +
                                   "); the Python binding serves host memory: CPU tensors");
  }
  std::size_t count = 1;
  std::int64_t expected_stride = 1;
  bool contiguous = true;
  for (std::int32_t axis = tensor.ndim - 1; axis >= 0; --axis) {
    const std::int64_t extent = tensor.shape[axis];
    if (tensor.strides != nullptr && extent > 1 && tensor.strides[axis] != expected_stride) {
      contiguous = false;
    }
    expected_stride *= extent;
    count *= static_cast<std::size_t>(extent);
  }
  if (!contiguous) {
    throw InvalidArgumentError(operation, rank,
                               what +
                                   " is not contiguous (pass x.contiguous()): the library "
                                   "reads and writes it in place");
  }
  const std::size_t itemsize = (static_cast<std::size_t>(tensor.dtype.bits) + 7) / 8;
  if (declared && tensor.dtype.lanes == 1) {
    view.type = checked_declared(*declared, itemsize, what, operation, rank);
  } else if (const auto inferred = type_of_dlpack(tensor.dtype)) {
    view.type = *inferred;
  } else {
    throw InvalidArgumentError(
        operation, rank,
        what + " has DLPack elements of code " + std::to_string(tensor.dtype.code) + ", " +
            std::to_string(tensor.dtype.bits) + " bits, " + std::to_string(tensor.dtype.lanes) +
            " lanes, which the library does not reduce: float16, bfloat16, float32, float64, "
            "int8, uint8, int32, int64");
  }
  view.data = static_cast<char*>(tensor.data) + tensor.byte_offset;
  view.count = count;
  return view;
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
  if (!PyObject_CheckBuffer(object.ptr()) && py::hasattr(object, "__dlpack__")) {
    return dlpack_view(object, operation, rank, argument, declared);
  }
  BufferView view;
  try {
    view.info = py::reinterpret_borrow<py::buffer>(object).request(false);
  } catch (const py::error_already_set&) {
    throw InvalidArgumentError(operation, rank,
                               std::string(argument) + " (a " + type_name_of(object) +
                                   ") supports neither the buffer protocol nor DLPack (give a "
                                   "numpy array, memoryview, array.array, bytearray or a CPU "
                                   "tensor)");
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
    view.type = checked_declared(*declared, itemsize, argument, operation, rank);
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
