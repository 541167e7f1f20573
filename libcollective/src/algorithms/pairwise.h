// Pairwise exchange for all_to_all and all_to_all_v (docs/algorithms.md,
// "pairwise"): p-1 steps, each sending one block to one peer and receiving
// one from another, several steps in flight over MPI point-to-point
// (PeerExchange: pieces of at most COLLECTIVE_MAX_MESSAGE_BYTES, the call's
// deadline, abort). Every byte crosses the network once: the large-block
// algorithm.
#pragma once

#include "algorithms/collective_algorithm.h"

namespace collective::internal {

class PairwiseAlgorithm final : public CollectiveAlgorithm {
 public:
  Algorithm id() const override { return Algorithm::kPairwise; }
  std::span<const CollectiveKind> serves() const override;
  Support supports_served(const Request& request, const CommunicatorState& state) const override;
  std::optional<double> estimate_seconds(const Request& request,
                                         const Topology& topology) const override;
  void run(const Request& request, CommunicatorState& state) const override;
};

}  // namespace collective::internal
