// Recursive doubling (docs/algorithms.md): log2(p) exchanges of the whole
// buffer, latency-optimal for small all_reduce. Non-powers of two fold the
// first 2*(p - p2) ranks pairwise into p2 before and unfold after. Also
// serves barrier as a dissemination barrier (the same doubling distances,
// for any p).
#pragma once

#include "algorithms/algorithm.h"

namespace collective::internal {

class RecursiveDoublingAlgorithm final : public CollectiveAlgorithm {
 public:
  Algorithm id() const override { return Algorithm::kRecursiveDoubling; }
  Support supports(const Request& request, const CommunicatorState& state) const override;
  std::optional<double> estimate_seconds(const Request& request,
                                         const Topology& topology) const override;
  void run(const Request& request, CommunicatorState& state) const override;
};

}  // namespace collective::internal
