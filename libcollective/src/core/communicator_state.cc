#include "core/communicator_state.h"

#include <vector>

#include "collective/errors.h"
#include "core/env_params.h"
#include "core/flight_recorder.h"
#include "core/log.h"
#include "core/mpi_check.h"
#include "core/mpi_thread_level.h"
#include "core/wait_guard.h"

namespace collective::internal {

CommunicatorState::CommunicatorState(MPI_Comm owned_comm, const char* operation)
    : WaitSubject(owned_comm, 0), origin(operation) {
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int length = 0;
  {
    const MpiLock lock;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Get_processor_name(name, &length);
  }
  host.assign(name, static_cast<std::size_t>(length));
  if (size > 1) learn_peers(operation);
}

void CommunicatorState::learn_peers(const char* operation) {
  // Every rank has just completed the duplication, so this finishes at
  // once unless a rank dies in between; it is bounded all the same.
  const ProcessIdentity mine = own_identity();
  std::vector<ProcessIdentity> all(static_cast<std::size_t>(size));
  MPI_Request request = MPI_REQUEST_NULL;
  {
    const MpiLock lock;
    check_mpi(MPI_Iallgather(&mine, sizeof(mine), MPI_BYTE, all.data(), sizeof(mine), MPI_BYTE,
                             comm, &request),
              "MPI_Iallgather", operation, rank);
  }
  WaitGuard guard(operation, rank, env_params().timeout, nullptr, "exchange of process identities");
  int done = 0;
  while (true) {
    {
      const MpiLock lock;
      check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test", operation, rank);
    }
    if (done) break;
    guard.idle([] { return WaitTarget{{}, "every rank of the new communicator"}; });
  }
  liveness.adopt(std::move(all), rank);
}

CommunicatorState::CommunicatorState(std::shared_ptr<const Topology> topology_value, int rank_value)
    : WaitSubject(MPI_COMM_NULL, rank_value),
      size(topology_value ? topology_value->size() : 1),
      topology(std::move(topology_value)) {
  if (topology) host = topology->node(topology->node_of(rank)).host;
}

std::string CommunicatorState::describe() const {
  std::string text = "communicator of " + std::to_string(size) + (size == 1 ? " rank" : " ranks");
  if (!origin.empty()) text += " made by " + origin;
  return text;
}

CommunicatorState::~CommunicatorState() {
  // Destructors never throw; a failure to free is only logged.
  try {
    release();
  } catch (...) {
  }
}

void CommunicatorState::poison(const CommunicationError& error) {
  if (poisoned) return;
  poisoned = error.what();
  if (const auto* peer_failure = dynamic_cast<const PeerFailedError*>(&error)) {
    failed_ranks = peer_failure->failed_ranks();
    if (flight_recorder) flight_recorder->note_lost(failed_ranks);
  }
}

void CommunicatorState::release() {
  // Calls in flight run to their end (each within its timeout) while the
  // communicator is still whole.
  progress_engine.reset();
  point_to_point_engines.clear();
  freed = true;
  // NCCL communicators go before the MPI communicators they were made on;
  // the node segment only unmaps memory, it never waits for peers.
  resources.clear();
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
  if (poisoned || abort_requested()) {
    // Requests of the failed call may still reference the communicator;
    // MPI_Comm_free would wait for them. Leave it to MPI_Finalize.
    comm = MPI_COMM_NULL;
    node_comm = MPI_COMM_NULL;
    return;
  }
  if (mpi_thread_level() < MPI_THREAD_SERIALIZED) {
    int main_thread = 0;
    MPI_Is_thread_main(&main_thread);
    if (!main_thread) {
      // Only the main thread may call MPI (FUNNELED); the communicator is
      // left to MPI_Finalize (Communicator::free from another thread is
      // refused; a destructor cannot refuse).
      COLLECTIVE_LOG(kDebug, "communicator released outside the main thread at "
                                 << mpi_thread_level_name(mpi_thread_level())
                                 << "; left to MPI_Finalize");
      comm = MPI_COMM_NULL;
      node_comm = MPI_COMM_NULL;
      return;
    }
  }
  // MPI_Comm_free does not wait for peers (Open MPI and MPICH free locally).
  const MpiLock lock;
  if (node_comm != MPI_COMM_NULL) {
    const int node_rc = MPI_Comm_free(&node_comm);
    if (node_rc != MPI_SUCCESS) {
      COLLECTIVE_LOG(kWarn,
                     "MPI_Comm_free (node communicator) failed: " << mpi_error_text(node_rc));
    }
    node_comm = MPI_COMM_NULL;
  }
  const int rc = MPI_Comm_free(&comm);
  if (rc != MPI_SUCCESS) {
    COLLECTIVE_LOG(kWarn, "MPI_Comm_free failed: " << mpi_error_text(rc));
  }
  comm = MPI_COMM_NULL;
}

void CommunicatorState::check_abort(const Request& request) const {
  if (!abort_requested()) return;
  throw CommunicationError(request.label(), rank,
                           "aborted by Communicator::abort: " + abort_reason());
}

}  // namespace collective::internal
