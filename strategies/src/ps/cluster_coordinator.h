// What cluster_coordinator.cc defines beside the public ClusterCoordinator
// (collective/distribute/cluster_coordinator.h): the state behind a
// RemoteValue, which the dispatcher fills in.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>

#include "collective/distribute/cluster_coordinator.h"

namespace collective::distribute::detail {

struct RemoteValueState {
  std::mutex mutex;
  std::condition_variable changed;
  RemoteValue::Status status = RemoteValue::Status::kPending;
  Tensor value;
  // kFailed / kCancelled: what fetch() raises.
  std::string error_operation;
  int error_rank = -1;
  std::string error_cause;
  bool unavailable = false;  // UnavailableError rather than ClosureError

  void finish(RemoteValue::Status status, Tensor value = Tensor());
  void fail(RemoteValue::Status status, std::string operation, int rank, std::string cause,
            bool unavailable);
};

}  // namespace collective::distribute::detail
