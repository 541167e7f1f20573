// The MPI library's own collectives (MPI_Allreduce, MPI_Reduce_scatter_block,
// MPI_Allgather, MPI_Bcast, MPI_Reduce, MPI_Barrier): the baseline every
// other algorithm is measured against. Counts above what one MPI call takes
// are split into pieces. These calls block inside MPI, so the call's
// timeout cannot interrupt them (docs/errors.md).
#pragma once

#include "algorithms/collective_algorithm.h"

namespace collective::internal {

class MpiPassthroughAlgorithm final : public CollectiveAlgorithm {
 public:
  Algorithm id() const override { return Algorithm::kMpi; }
  std::span<const CollectiveKind> serves() const override;
  Support supports_served(const Request& request, const CommunicatorState& state) const override;
  void run(const Request& request, CommunicatorState& state) const override;
};

}  // namespace collective::internal
