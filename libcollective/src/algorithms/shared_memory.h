// Shared-memory collectives on one node: all_reduce and reduce_scatter
// here, the block exchanges (all_to_all(_v), all_gather(_v), gather(_v),
// scatter(_v), broadcast) in shared_memory_exchange.h.
//
// All-reduce (docs/topology.md, "shared_memory"): the ranks of
// one node reduce through the node's segment. Each rank owns a region of
// the buffer and reduces it reading every rank's input, then every rank
// copies every reduced region out; large buffers go through in rounds of
// fixed-size pieces, with flags in shared memory instead of barriers.
// Small buffers take a one-step form where every rank reduces all of it.
// Every element is reduced in local-rank order by exactly one rule, so all
// ranks get the same bits, run after run.
#pragma once

#include "algorithms/collective_algorithm.h"

namespace collective::internal {

class SharedMemoryAlgorithm final : public CollectiveAlgorithm {
 public:
  Algorithm id() const override { return Algorithm::kSharedMemory; }
  std::span<const CollectiveKind> serves() const override;
  Support supports_served(const Request& request, const CommunicatorState& state) const override;
  std::optional<double> estimate_seconds(const Request& request,
                                         const Topology& topology) const override;
  // Inputs that fit the inline box travel with the call's fingerprint.
  bool carries_check(const Request& request, CommunicatorState& state) const override;
  void run(const Request& request, CommunicatorState& state) const override;

 private:
  void all_reduce(const Request& request, CommunicatorState& state) const;
  void reduce_scatter(const Request& request, CommunicatorState& state) const;
};

}  // namespace collective::internal
