// The WorkerCalls of a CollectiveAllReduce, kept apart from worker_calls.h
// so that the calls do not depend on the cross-device ops built on them.
#pragma once

#include <memory>

#include "collective/distribute/cross_device_ops.h"
#include "reduce/worker_calls.h"

namespace collective::distribute::detail {

// The WorkerCalls of a CollectiveAllReduce, which its strategy shares for
// its own cross-worker calls (one lock, one count of steps).
struct WorkerCallsAccess {
  static std::shared_ptr<WorkerCalls> of(CollectiveAllReduce& ops) { return ops.worker_calls_; }
};

}  // namespace collective::distribute::detail
