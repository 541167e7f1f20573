// Recursive doubling (docs/algorithms.md): log2(p) exchanges of the whole
// buffer, latency-optimal for small all_reduce. Non-powers of two fold the
// first 2*(p - p2) ranks pairwise into p2 before and unfold after. Also
// serves barrier as a dissemination barrier (the same doubling distances,
// for any p). A small all_reduce (its p-1 copies within 64 KiB) whose cross-rank check is the
// direct exchange over MPI carries its input in the check's messages instead: once the check
// agrees, every rank holds every input and reduces them in rank order, so the call costs one round
// in all (no separate check round).
#pragma once

#include "algorithms/collective_algorithm.h"

namespace collective::internal {

class RecursiveDoublingAlgorithm final : public CollectiveAlgorithm {
 public:
  Algorithm id() const override { return Algorithm::kRecursiveDoubling; }
  std::span<const CollectiveKind> serves() const override;
  Support supports_served(const Request& request, const CommunicatorState& state) const override;
  std::optional<double> estimate_seconds(const Request& request,
                                         const Topology& topology) const override;
  bool carries_check(const Request& request, CommunicatorState& state) const override;
  void run(const Request& request, CommunicatorState& state) const override;
};

}  // namespace collective::internal
