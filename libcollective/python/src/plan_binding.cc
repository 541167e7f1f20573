#include "plan_binding.h"

#include <memory>
#include <utility>

#include <pybind11/stl.h>

namespace collective::python {
namespace {

namespace py = pybind11;

}  // namespace

PyPlan::PyPlan(Plan plan, KeptAlive kept, int rank)
    : plan_(std::move(plan)), kept_(std::move(kept)), rank_(rank) {}

py::object PyPlan::start(const py::object& self) {
  auto& plan = self.cast<PyPlan&>();
  release_finished_orphans();
  Work work;
  {
    py::gil_scoped_release release;
    work = plan.plan_.start();
  }
  KeptAlive kept;
  kept.objects.push_back(self);
  return py::cast(std::make_unique<PyWork>(std::move(work), std::move(kept), plan.rank_));
}

bool PyPlan::wait(std::optional<double> timeout) {
  // No buffers of its own: the plan holds them.
  return PyWork(plan_.last_start(), KeptAlive{}, rank_).wait(timeout);
}

bool PyPlan::test() { return PyWork(plan_.last_start(), KeptAlive{}, rank_).test(); }

void bind_plan(py::module_& module) {
  py::class_<PyPlan>(module, "Plan", R"doc(
A persistent collective made by a Communicator `_init` method (MPI-4's
MPI_Allreduce_init): creation is a collective call that checks the arguments,
chooses the algorithm and agrees with the other ranks once; start() then
repeats the call on the same buffers, which the plan keeps alive. Between
starts the buffers may be read and rewritten freely; while a start is in flight
they belong to it, as an `_async` call's. Every rank starts its plans in the
same order among its other calls.)doc")
      .def("start", &PyPlan::start,
           "Starts the call once more; returns its collective.Work. A start while the last is "
           "unfinished raises InvalidArgumentError.")
      .def("wait", &PyPlan::wait, py::arg("timeout") = py::none(),
           "Waits for the last start, as its Work.wait (True at once before the first start).")
      .def("test", &PyPlan::test, "Never blocks: whether the last start finished, as Work.test.")
      .def("describe", &PyPlan::describe,
           "The plan as its errors name it, e.g. 'all_reduce plan #4 (count 7, float32, sum)'.")
      .def("__repr__",
           [](const PyPlan& self) { return "<collective.Plan " + self.describe() + ">"; });
}

}  // namespace collective::python
