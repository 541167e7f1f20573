#include "work_binding.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include <pybind11/stl.h>

#include "collective/errors.h"

namespace collective::python {
namespace {

namespace py = pybind11;

struct Orphan {
  Work work;
  KeptAlive kept;
};

// Touched only with the GIL held.
std::vector<Orphan>& orphans() {
  static auto* list = new std::vector<Orphan>();  // never destroyed: outlives interpreter exit
  return *list;
}

}  // namespace

PyWork::PyWork(Work work, KeptAlive kept, int rank)
    : work_(std::move(work)), kept_(std::move(kept)), rank_(rank) {}

PyWork::~PyWork() {
  if (kept_.views.empty() && kept_.objects.empty()) return;
  if (work_.is_completed()) return;  // kept_ released here, with the GIL held
  orphans().push_back(Orphan{std::move(work_), std::move(kept_)});
}

void PyWork::release_if_finished() {
  if (work_.is_completed()) kept_ = KeptAlive{};
}

bool PyWork::wait(std::optional<double> timeout) {
  if (timeout && (!(*timeout >= 0) || std::isnan(*timeout))) {
    throw InvalidArgumentError(
        work_.operation(), rank_,
        "wait's timeout must be a number of seconds >= 0, not " + std::to_string(*timeout));
  }
  bool finished = true;
  {
    py::gil_scoped_release release;
    if (timeout) {
      const double ms = std::min(*timeout, 3.1536e9) * 1000.0;
      finished = work_.wait(std::chrono::milliseconds(std::llround(ms)));
    } else {
      work_.wait();
    }
  }
  // The call finished (or failed: then wait threw and the buffers are
  // released by the destructor, or by the next wait/test).
  release_if_finished();
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  return finished;
}

bool PyWork::test() {
  release_if_finished();
  return work_.test();
}

bool PyWork::is_completed() {
  release_if_finished();
  return work_.is_completed();
}

void release_finished_orphans() {
  auto& list = orphans();
  std::erase_if(list, [](const Orphan& orphan) { return orphan.work.is_completed(); });
}

void wait_for_orphans() {
  auto& list = orphans();
  for (auto& orphan : list) {
    py::gil_scoped_release release;
    orphan.work.is_completed();
    // A failure nobody waited for is logged by the library (WARN).
    while (!orphan.work.wait(std::chrono::milliseconds(1000))) {
    }
  }
  list.clear();
}

void bind_work(py::module_& module) {
  py::class_<PyWork>(module, "Work", R"doc(
A collective started by a Communicator `_async` method. The library completes
it on its own while Python runs; the Work keeps the call's buffers alive until
then (a Work dropped early hands them to the module, which releases them once
the call finished). Do not read the receive buffer, nor write either buffer,
before the call finished.)doc")
      .def("wait", &PyWork::wait, py::arg("timeout") = py::none(),
           "Waits, GIL released, at most timeout seconds (None: until done). True when the call "
           "finished (raising its error if it failed), False when still in flight.")
      .def("test", &PyWork::test,
           "Never blocks: False while in flight; True when finished (raising its error if it "
           "failed).")
      .def("is_completed", &PyWork::is_completed,
           "True when the call finished, failed or not (never raises).")
      .def_property_readonly("operation", &PyWork::operation,
                             "The call as its errors name it, e.g. 'all_reduce #12'.")
      .def("__repr__", [](PyWork& self) {
        return "<collective.Work " + self.operation() +
               (self.is_completed() ? " completed>" : " in flight>");
      });
}

}  // namespace collective::python
