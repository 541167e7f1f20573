#include "core/communicator_state.h"

#include "core/log.h"
#include "core/mpi_check.h"

namespace collective::internal {

CommunicatorState::CommunicatorState(MPI_Comm owned_comm) : comm(owned_comm) {
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  host.assign(name, static_cast<std::size_t>(length));
}

CommunicatorState::CommunicatorState(std::shared_ptr<const Topology> topology_value, int rank_value)
    : rank(rank_value),
      size(topology_value ? topology_value->size() : 1),
      topology(std::move(topology_value)) {
  if (topology) host = topology->node(topology->node_of(rank)).host;
}

CommunicatorState::~CommunicatorState() {
  // Destructors never throw; a failure to free is only logged.
  try {
    release();
  } catch (...) {
  }
}

void CommunicatorState::release() {
  freed = true;
  nccl.reset();
  // The segment only unmaps memory; it never waits for peers.
  node_segment.reset();
  if (cross_node) {
    if (poisoned && !cross_node->poisoned) cross_node->poisoned = poisoned;
    cross_node->release();
    cross_node.reset();
  }
  if (comm == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    COLLECTIVE_LOG(kDebug, "communicator outlived MPI_Finalize; not freed");
    comm = MPI_COMM_NULL;
    node_comm = MPI_COMM_NULL;
    return;
  }
  if (poisoned) {
    // Requests of the failed call may still reference the communicator;
    // MPI_Comm_free would wait for them. Leave it to MPI_Finalize.
    comm = MPI_COMM_NULL;
    node_comm = MPI_COMM_NULL;
    return;
  }
  if (node_comm != MPI_COMM_NULL) {
    const int node_rc = MPI_Comm_free(&node_comm);
    if (node_rc != MPI_SUCCESS) {
      COLLECTIVE_LOG(kWarn, "MPI_Comm_free (node communicator) failed: " << mpi_error_text(node_rc));
    }
    node_comm = MPI_COMM_NULL;
  }
  const int rc = MPI_Comm_free(&comm);
  if (rc != MPI_SUCCESS) {
    COLLECTIVE_LOG(kWarn, "MPI_Comm_free failed: " << mpi_error_text(rc));
  }
  comm = MPI_COMM_NULL;
}

}  // namespace collective::internal
