// A Python buffer as a collective sees it: its address, its element count
// and the library's DataType, read through the buffer protocol or DLPack
// (torch's CPU tensors, bfloat16 included) without a copy. The view keeps
// the exporter's memory alive and unchanged in size while a call runs with
// the GIL released; it is destroyed with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "collective/types.h"

namespace collective::python {

struct BufferView {
  pybind11::buffer_info info;    // through the buffer protocol
  std::shared_ptr<void> dlpack;  // through DLPack: the consumed tensor, released at the end
  void* data = nullptr;
  std::size_t count = 0;
  DataType type = DataType::kFloat32;
};

// The buffer of `object` for argument `argument` of `operation`: C
// contiguous, of a type the library reduces (numpy's float16 ... int64, or
// `declared` when given, e.g. bfloat16 for 2-byte elements), writable when
// the call writes it. An object without the buffer protocol is read
// through its __dlpack__() (a tensor in host memory; its dtype, bfloat16
// included, gives the type; DLPack has no read-only flag). Anything else
// raises collective.InvalidArgumentError naming the operation and the
// argument, before the call.
BufferView view_of(const pybind11::handle& object, const std::string& operation, int rank,
                   const char* argument, bool writable, std::optional<DataType> declared);

// "float16", "bfloat16", ..., "int64" (numpy's names) to the DataType.
DataType parse_data_type(const std::string& name, const std::string& operation, int rank);

}  // namespace collective::python
