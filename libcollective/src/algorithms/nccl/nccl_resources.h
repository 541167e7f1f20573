// What the NCCL algorithm keeps per library communicator, created at first
// use and released with the communicator: the node layout, one NCCL
// communicator (with its stream) per CUDA device for all ranks, and for the
// hierarchical variant one per device for the node, the library
// communicator across nodes and the pinned staging buffer.
//
// Every creation here is collective. All ranks reach it at the same call
// because every rank of a call selects the same algorithm and variant; a
// rank that moved to another device alone leaves the others to time out
// naming the NCCL set-up they waited for.
#pragma once

#include <mpi.h>

#include <map>
#include <memory>
#include <optional>

#include "algorithms/nccl/nccl_communicator.h"
#include "algorithms/nccl/nccl_node_layout.h"
#include "core/communicator_state.h"
#include "gpu/pinned_buffer.h"

namespace collective::internal {

class NcclResources final : public AlgorithmResources {
 public:
  // The resources of `state`, created empty on first use.
  static NcclResources& of(CommunicatorState& state);

  explicit NcclResources(CommunicatorState& owner) : owner_(owner) {}
  ~NcclResources() override;

  const NodeLayout& layout(const Request& request);
  NcclCommunicator& all_ranks(int device, const Request& request);
  NcclCommunicator& this_node(int device, const Request& request);
  CommunicatorState& across_nodes(const Request& request);
  std::byte* staging(std::size_t bytes, const Request& request);

 private:
  void split_for_hierarchy(const Request& request);

  CommunicatorState& owner_;
  std::optional<NodeLayout> layout_;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  std::unique_ptr<CommunicatorState> across_nodes_;
  gpu::PinnedBuffer staging_;
  // Declared last, destroyed first: NCCL goes before the MPI communicators.
  std::map<int, std::unique_ptr<NcclCommunicator>> all_ranks_by_device_;
  std::map<int, std::unique_ptr<NcclCommunicator>> this_node_by_device_;
};

}  // namespace collective::internal
