#include "algorithms/nccl/nccl_resources.h"

#include "algorithms/nccl/nccl_bootstrap.h"
#include "core/log.h"
#include "core/rank_translation.h"
#include "core/mpi_check.h"

namespace collective::internal {

NcclResources& NcclResources::of(CommunicatorState& state) {
  return state.resources.get_or_make<NcclResources>(
      [&state] { return std::make_unique<NcclResources>(state); });
}

NcclResources::~NcclResources() {
  all_ranks_by_device_.clear();
  this_node_by_device_.clear();
  if (node_comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  // After a failure a bootstrap broadcast may still be pending on the node
  // communicator; leave it to MPI_Finalize, as CommunicatorState does.
  if (finalized || owner_.poisoned) return;
  const int rc = MPI_Comm_free(&node_comm_);
  if (rc != MPI_SUCCESS) COLLECTIVE_LOG(kWarn, "MPI_Comm_free (node): " << mpi_error_text(rc));
}

const NodeLayout& NcclResources::layout(const Request& request) {
  if (!layout_) {
    layout_ = probe_node_layout(owner_.comm, owner_.host, request, owner_.rank);
    COLLECTIVE_LOG(kDebug, request.label()
                               << ": " << layout_->node_count << " node(s), " << layout_->local_size
                               << " rank(s) on this one (local rank " << layout_->local_rank
                               << ")");
  }
  return *layout_;
}

NcclCommunicator& NcclResources::all_ranks(int device, const Request& request) {
  auto& slot = all_ranks_by_device_[device];
  if (!slot) {
    slot = NcclCommunicator::create(owner_.comm, device, request, owner_.rank,
                                    "all " + std::to_string(owner_.size) + " ranks");
  }
  return *slot;
}

void NcclResources::split_for_hierarchy(const Request& request) {
  if (node_comm_ != MPI_COMM_NULL) return;
  const NodeLayout& nodes = layout(request);
  // The splits block; they start only once every rank is known to be here.
  rendezvous(owner_.comm, request, owner_.rank,
             "every rank to set up the hierarchical variant (MPI_Ibarrier)");
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(owner_.comm, nodes.node_index, owner_.rank, &node), "MPI_Comm_split",
            request.label(), owner_.rank);
  MPI_Comm across = MPI_COMM_NULL;
  const int rc = MPI_Comm_split(owner_.comm, nodes.local_rank, owner_.rank, &across);
  if (rc != MPI_SUCCESS) {
    MPI_Comm_free(&node);
    check_mpi(rc, "MPI_Comm_split", request.label(), owner_.rank);
  }
  node_comm_ = node;
  MPI_Comm_set_errhandler(node_comm_, MPI_ERRORS_RETURN);
  across_nodes_ = std::make_unique<CommunicatorState>(across);
  across_nodes_->spans_nodes = true;
  across_nodes_->step_of = &owner_;
  across_nodes_->shown_ranks = ranks_in(across, owner_.comm);
}

NcclCommunicator& NcclResources::this_node(int device, const Request& request) {
  split_for_hierarchy(request);
  auto& slot = this_node_by_device_[device];
  if (!slot) slot = NcclCommunicator::create(node_comm_, device, request, owner_.rank, "this node");
  return *slot;
}

CommunicatorState& NcclResources::across_nodes(const Request& request) {
  split_for_hierarchy(request);
  return *across_nodes_;
}

std::byte* NcclResources::staging(std::size_t bytes, const Request& request) {
  return staging_.get(bytes, request.label(), owner_.rank);
}

}  // namespace collective::internal
