// collective._collective: the native part of `import collective`.
#include <pybind11/pybind11.h>

#include "collective/collective.h"
#include "communicator_binding.h"
#include "cxx_timing.h"
#include "mpi_environment.h"
#include "plan_binding.h"
#include "python_errors.h"
#include "work_binding.h"

PYBIND11_MODULE(_collective, module) {
  module.doc() = "libcollective's collectives on Python buffers (see the collective package).";
  module.attr("__version__") = std::string(collective::version_string());
  module.attr("built_with_nccl") = collective::built_with_nccl();
  collective::python::register_errors(module);
  collective::python::bind_environment(module);
  collective::python::bind_work(module);
  collective::python::bind_plan(module);
  collective::python::bind_communicator(module);
  collective::python::bind_cxx_timing(module);
}
