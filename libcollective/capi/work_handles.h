// The C API's handles of calls in flight (collective_work_t): a registry of
// serial numbers, as for communicator handles (comm_handles.h), so that a
// freed or never-issued handle gives a status, never a dereference.
#pragma once

#include <memory>
#include <string>

#include "collective/collective.h"
#include "collective/collective_c.h"

namespace collective::capi {

// Registers `work` and returns its new handle.
collective_work_t issue_work(Work work);
// The Work of a live handle (shared: a free on another thread meanwhile
// cannot end it), or nullptr with `why` set.
std::shared_ptr<Work> find_work(collective_work_t handle, std::string& why);
// Removes `handle`; false with `why` set when it is not live.
bool retire_work(collective_work_t handle, std::string& why);

}  // namespace collective::capi
