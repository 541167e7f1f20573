// Ring algorithms (docs/algorithms.md, "ring"): bandwidth-optimal for large
// messages. all_reduce = reduce-scatter + all-gather around the ring, each
// rank sending 2(p-1)/p of the buffer; every chunk is cut into segments so
// that reducing one segment overlaps the transfer of the next. Also serves
// reduce_scatter, all_gather, reduce (reduce-scatter, then each owner sends
// its chunk to the root) and broadcast (a pipelined chain from the root).
#pragma once

#include "algorithms/collective_algorithm.h"

namespace collective::internal {

class RingAlgorithm final : public CollectiveAlgorithm {
 public:
  Algorithm id() const override { return Algorithm::kRing; }
  std::span<const CollectiveKind> serves() const override;
  Support supports_served(const Request& request, const CommunicatorState& state) const override;
  std::optional<double> estimate_seconds(const Request& request,
                                         const Topology& topology) const override;
  bool carries_check(const Request& request, CommunicatorState& state) const override;
  void run(const Request& request, CommunicatorState& state) const override;
};

// The one ring of the library: listed by the registry, and run as a step by
// the algorithms that nest it (hierarchical's ring across nodes, NCCL's
// hierarchical variant's host step), which need the ring, not the registry.
extern const RingAlgorithm kRingAlgorithm;

}  // namespace collective::internal
