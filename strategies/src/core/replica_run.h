// One call of Strategy::run: the rendezvous of its replica threads and the
// collectives they make through their ReplicaContexts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collective/distribute/replica_context.h"
#include "collective/distribute/tensor.h"
#include "base/replica_rendezvous.h"
#include "core/strategy_impl.h"

namespace collective::distribute::detail {

// InvalidArgumentError naming merge_call and both sizes when merge_fn's
// PerReplica result does not hold one value per local replica.
void check_merge_result(const StrategyImpl& impl, const MergeRequest& request, const void* result);

class ReplicaRun {
 public:
  explicit ReplicaRun(StrategyImpl& impl);

  StrategyImpl& impl() { return impl_; }
  ReplicaRendezvous& rendezvous() { return rendezvous_; }

  // values: this replica's tensors, read in place (their owner waits here).
  std::vector<Tensor> all_reduce(int local_replica, ReduceOp op,
                                 const std::vector<const Tensor*>& values);
  Tensor all_gather(int local_replica, const Tensor& value, int axis);
  std::shared_ptr<const void> merge_call(int local_replica, const MergeRequest& request);

 private:
  StrategyImpl& impl_;
  ReplicaRendezvous rendezvous_;
};

}  // namespace collective::distribute::detail
