// Bruck's all_to_all (docs/algorithms.md, "bruck"): ceil(log2 p) rounds for
// any p, each sending about half of the blocks, gathered from and scattered
// back into a rotated copy of the send buffer. Fewer messages than pairwise
// at the price of ~log2(p)/2 times the bytes: the small-block algorithm.
#pragma once

#include "algorithms/collective_algorithm.h"

namespace collective::internal {

class BruckAlgorithm final : public CollectiveAlgorithm {
 public:
  Algorithm id() const override { return Algorithm::kBruck; }
  std::span<const CollectiveKind> serves() const override;
  Support supports_served(const Request& request, const CommunicatorState& state) const override;
  std::optional<double> estimate_seconds(const Request& request,
                                         const Topology& topology) const override;
  void run(const Request& request, CommunicatorState& state) const override;
};

}  // namespace collective::internal
