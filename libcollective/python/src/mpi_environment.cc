#include "mpi_environment.h"

#include <memory>

#include "collective/environment.h"
#include "work_binding.h"

namespace collective::python {
namespace {

namespace py = pybind11;

// The Environment this module made, if any. Held until finalize().
std::unique_ptr<Environment>& owned_environment() {
  static std::unique_ptr<Environment> environment;
  return environment;
}

}  // namespace

void ensure_mpi() {
  if (Environment::initialized() || owned_environment()) return;
  owned_environment() = std::make_unique<Environment>();
}

void bind_environment(py::module_& module) {
  module.def("initialized", &Environment::initialized,
             "True while MPI is initialised and not yet finalised.");
  module.def(
      "init", [] { ensure_mpi(); },
      "Initialises MPI now (at MPI_THREAD_MULTIPLE) unless it is; Communicator.world() does it "
      "on first use.");
  module.def(
      "finalize",
      [] {
        wait_for_orphans();  // their buffers are released before MPI goes
        py::gil_scoped_release release;
        owned_environment().reset();
      },
      "Finalises MPI if this module initialised it (also run at interpreter exit); no "
      "library call works afterwards.");
  module.def("host_name", &Environment::host_name);
}

}  // namespace collective::python
