// Hierarchical all-reduce (docs/topology.md, "hierarchical"): inside each
// node a reduce-scatter through shared memory, across nodes a ring
// all-reduce of each region among the ranks that share a local rank, then
// an all-gather inside each node. Only node-local bytes cross the memory
// bus more than once; each node sends 2(m-1)/m of the buffer over the
// network in total for m nodes, split over its owners.
//
// Nodes with unequal rank counts: the buffer is cut into as many regions as
// the smallest node has ranks (k). Local ranks 0..k-1 of every node own a
// region and take part in the ring of that region; the other local ranks
// only contribute their input to the node's reduce-scatter and receive the
// result in the node's all-gather.
//
// Across nodes the cross-rank check rides on the ring's first message
// (cross_rank_check/two_stage_check.h): a node's ranks first learn from each
// other that their calls agree, reduce into scratch rather than the output,
// and the check finishes with the first message that leaves the node.
#pragma once

#include <cstddef>

#include "algorithms/collective_algorithm.h"

namespace collective::internal {

class HierarchicalAlgorithm final : public CollectiveAlgorithm {
 public:
  Algorithm id() const override { return Algorithm::kHierarchical; }
  std::span<const CollectiveKind> serves() const override;
  Support supports_served(const Request& request, const CommunicatorState& state) const override;
  std::optional<double> estimate_seconds(const Request& request,
                                         const Topology& topology) const override;
  bool carries_check(const Request& request, CommunicatorState& state) const override;
  void run(const Request& request, CommunicatorState& state) const override;
};

}  // namespace collective::internal
