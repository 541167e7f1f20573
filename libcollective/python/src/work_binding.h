// collective.Work: a collective started by one of Communicator's `_async`
// methods, and the Python objects whose memory the call uses until it
// finishes.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

#include "buffer_view.h"
#include "collective/work.h"

namespace collective::python {

// The buffers of a call in flight: their exported views (which pin the
// memory and its size) and the objects themselves.
struct KeptAlive {
  std::vector<BufferView> views;
  std::vector<pybind11::object> objects;
};

class PyWork {
 public:
  PyWork(Work work, KeptAlive kept, int rank);
  PyWork(const PyWork&) = delete;
  PyWork& operator=(const PyWork&) = delete;
  // A Work dropped while its call is in flight hands its buffers to the
  // module, which releases them once the call finished (never before).
  ~PyWork();

  // Waits (GIL released) at most `timeout` seconds, forever when none; True
  // once finished (rethrowing the call's error), False when still in flight.
  bool wait(std::optional<double> timeout);
  bool test();
  bool is_completed();
  std::string operation() const { return work_.operation(); }

 private:
  void release_if_finished();
  Work work_;
  KeptAlive kept_;
  int rank_;
};

// Releases the buffers of dropped Works whose calls finished; called with
// the GIL held at every `_async` start.
void release_finished_orphans();
// Waits for every dropped Work's call, then releases its buffers (before
// MPI is finalised).
void wait_for_orphans();

void bind_work(pybind11::module_& module);

}  // namespace collective::python
