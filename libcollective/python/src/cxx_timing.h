// collective._collective._time_all_reduce_cxx: one C++ all_reduce on Python
// buffers, timed inside C++. The benchmark (examples/allreduce_bench.py)
// alternates it with the Python call on the same buffers and communicator,
// so that the binding's own cost is measured in one run, not across two
// programs. Private (leading underscore): not part of the API.
#pragma once

#include <pybind11/pybind11.h>

namespace collective::python {

void bind_cxx_timing(pybind11::module_& module);

}  // namespace collective::python
