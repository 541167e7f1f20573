// collective.Communicator: the C++ Communicator's blocking calls on Python
// buffers (buffer_view.h), keyword options, the GIL released during every
// call. Registered into the module by bind_communicator().
#pragma once

#include <pybind11/pybind11.h>

namespace collective::python {

void bind_communicator(pybind11::module_& module);

}  // namespace collective::python
