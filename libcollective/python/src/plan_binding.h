// collective.Plan: a persistent collective made by one of Communicator's
// `_init` methods, and the Python objects whose memory its starts use.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "collective/plan.h"
#include "work_binding.h"

namespace collective::python {

class PyPlan {
 public:
  PyPlan(Plan plan, KeptAlive kept, int rank);
  PyPlan(const PyPlan&) = delete;
  PyPlan& operator=(const PyPlan&) = delete;

  // Starts the call once more (GIL released while it is queued). The Work
  // keeps `self`, and so the plan's buffers, alive until the start
  // finished, even where the plan object is dropped first.
  static pybind11::object start(const pybind11::object& self);
  // Waits for the last start, as that start's Work.wait (True at once
  // before the first start).
  bool wait(std::optional<double> timeout);
  bool test();
  std::string describe() const { return plan_.describe(); }

 private:
  Plan plan_;
  KeptAlive kept_;  // the buffers, for the plan's whole life
  int rank_;
};

void bind_plan(pybind11::module_& module);

}  // namespace collective::python
