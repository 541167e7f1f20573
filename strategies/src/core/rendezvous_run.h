// One call of Strategy::run: the rendezvous of its replica threads and the
// collectives they make through their ReplicaContexts (which reach it as
// the ReplicaRun interface, replica_run.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collective/distribute/tensor.h"
#include "base/replica_rendezvous.h"
#include "core/replica_run.h"
#include "core/strategy_impl.h"

namespace collective::distribute::detail {

class RendezvousRun final : public ReplicaRun {
 public:
  explicit RendezvousRun(StrategyImpl& impl);

  StrategyImpl& impl() { return impl_; }
  ReplicaRendezvous& rendezvous() { return rendezvous_; }

  std::vector<Tensor> all_reduce(int local_replica, ReduceOp op,
                                 const std::vector<const Tensor*>& values) override;
  Tensor all_gather(int local_replica, const Tensor& value, int axis) override;
  std::shared_ptr<const void> merge_call(int local_replica, const MergeRequest& request) override;

 private:
  StrategyImpl& impl_;
  ReplicaRendezvous rendezvous_;
};

}  // namespace collective::distribute::detail
