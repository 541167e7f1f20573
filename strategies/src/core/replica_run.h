// What a ReplicaContext asks of the run() it belongs to: its collectives
// among the local replicas. An interface, so that ReplicaContext does not
// depend on the run's implementation (rendezvous_run.h), which depends on
// ReplicaContext's merge requests.
#pragma once

#include <memory>
#include <vector>

#include "collective/distribute/tensor.h"
#include "collective/types.h"

namespace collective::distribute::detail {

struct MergeRequest;

class ReplicaRun {
 public:
  // values: this replica's tensors, read in place (their owner waits here).
  virtual std::vector<Tensor> all_reduce(int local_replica, ReduceOp op,
                                         const std::vector<const Tensor*>& values) = 0;
  virtual Tensor all_gather(int local_replica, const Tensor& value, int axis) = 0;
  virtual std::shared_ptr<const void> merge_call(int local_replica,
                                                 const MergeRequest& request) = 0;

 protected:
  ~ReplicaRun() = default;
};

}  // namespace collective::distribute::detail
