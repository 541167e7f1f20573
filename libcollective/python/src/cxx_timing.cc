#include "cxx_timing.h"

#include <chrono>

#include "buffer_view.h"
#include "collective/collective.h"

namespace collective::python {

namespace py = pybind11;

void bind_cxx_timing(py::module_& module) {
  module.def(
      "_time_all_reduce_cxx",
      [](Communicator& comm, const py::object& send, const py::object& recv) {
        const std::string operation = "all_reduce";
        const int rank = comm.rank();
        const BufferView in = view_of(send, operation, rank, "send", false, std::nullopt);
        const BufferView out = view_of(recv, operation, rank, "recv", true, std::nullopt);
        if (in.type != out.type || in.count != out.count) {
          throw InvalidArgumentError(operation, rank,
                                     "_time_all_reduce_cxx takes send and recv of the same "
                                     "type and length");
        }
        // Only the library call is timed: the buffers were read above and
        // the GIL is released before the clock starts.
        py::gil_scoped_release release;
        const auto start = std::chrono::steady_clock::now();
        comm.all_reduce(in.data, out.data, in.count, in.type, AllReduceOptions{});
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        return elapsed.count();
      },
      py::arg("comm"), py::arg("send"), py::arg("recv"),
      "Seconds one C++ Communicator::all_reduce (sum) takes on these buffers (benchmarks only).");
}

}  // namespace collective::python
