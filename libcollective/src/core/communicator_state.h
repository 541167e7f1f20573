// What a Communicator handle points to: the private MPI communicator and
// everything the algorithms keep between calls.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collective/algorithm.h"
#include "collective/errors.h"
#include "collective/options.h"
#include "collective/topology.h"
#include "collective/types.h"
#include "core/checked_call_memo.h"
#include "core/request.h"
#include "core/scratch_buffer.h"
#include "core/resource_slots.h"
#include "core/wait_subject.h"

namespace collective::internal {

class CollectiveAlgorithm;
class FlightRecorder;

// One remembered AUTO decision (selection/selector.cc). A decision depends
// only on the call's shape, the topology and the rules, all fixed for the
// communicator, so repeated calls look it up instead of re-running the model.
struct SelectionMemo {
  const CollectiveAlgorithm* algorithm = nullptr;  // nullptr: empty entry
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::size_t count = 0;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  MemoryKind memory = MemoryKind::kHost;
  Algorithm requested = Algorithm::kAuto;
  bool deterministic = false;
  // The v-forms' counts, which their estimates read: a decision is reused
  // only for the same counts (compared whole).
  std::vector<std::size_t> send_counts;
  std::vector<std::size_t> recv_counts;
};

struct CommunicatorState : WaitSubject {
  // Takes ownership of `owned_comm` (a duplicate made for the library), sets
  // MPI_ERRORS_RETURN on it and learns who every rank is (PeerLiveness).
  // `operation` names the call in errors ("Communicator::world").
  explicit CommunicatorState(MPI_Comm owned_comm, const char* operation = "Communicator");
  // Without MPI: a state for selection experiments (collective_info, tests)
  // on a topology loaded from a file. Nothing can run on it.
  CommunicatorState(std::shared_ptr<const Topology> topology, int rank);
  ~CommunicatorState();
  CommunicatorState(const CommunicatorState&) = delete;
  CommunicatorState& operator=(const CommunicatorState&) = delete;

  // Frees the MPI communicator (idempotent); later calls are rejected.
  void release();

  // Communicator::abort (request_abort, abort_requested, abort_reason) and
  // what every wait loop reads: core/wait_subject.h.

  // Every wait loop calls this (or WaitGuard, which does): throws
  // CommunicationError naming the call when abort was requested.
  void check_abort(const Request& request) const;

  // "communicator of 4 ranks made by Communicator::split", for messages.
  std::string describe() const;

  int size = 1;
  std::string host;
  // The call that made it ("Communicator::world", "Communicator::split").
  std::string origin;
  // Which call holds the communicator now (core/exclusive_use.h); on a line
  // of its own, since every call writes it twice.
  alignas(64) std::atomic<std::uint64_t> in_use{0};

  std::uint64_t next_sequence = 0;
  // Communicator::send and recv: calls made so far with each peer, by
  // direction (sized on first use).
  std::vector<std::uint64_t> sends_to;
  std::vector<std::uint64_t> receives_from;
  Algorithm last_algorithm = Algorithm::kAuto;
  bool freed = false;
  // Set after a communication failure or timeout: the first cause, which
  // every later call reports.
  std::optional<std::string> poisoned;
  // The dead ranks (PeerFailedError) when that first failure was a peer's
  // death, ascending; later calls raise PeerFailedError with them again.
  std::vector<int> failed_ranks;
  // Keeps the first communication failure (its text, its dead ranks).
  void poison(const CommunicationError& error);
  // Communicator::shrink calls on this communicator so far: each one's
  // agreement tells its messages from an earlier one's.
  std::uint32_t shrinks = 0;

  // Reused by the algorithms: incoming segments, partial sums.
  ScratchBuffer scratch_in;
  ScratchBuffer scratch_work;
  // Reused by the cross-rank check: every rank's fingerprint of the call.
  ScratchBuffer scratch_check;

  // Where the ranks run (identical on every rank). Set when a Communicator
  // is created (topology/communicator_topology.h); null only for internal
  // states such as cross_node below, which no selection looks at.
  std::shared_ptr<const Topology> topology;
  // The ranks of this rank's node (topology->node_of), ordered by rank.
  MPI_Comm node_comm = MPI_COMM_NULL;
  // The ranks on other nodes with this rank's local rank, ordered by node;
  // set only with several nodes and a local rank below the smallest node's
  // rank count (hierarchical all-reduce runs its ring here).
  std::unique_ptr<CommunicatorState> cross_node;
  // An internal state whose ranks are each on a different node (cross_node,
  // NCCL's ring across nodes): it has no topology, but its messages cross
  // the network.
  bool spans_nodes = false;
  // AUTO's last few decisions, most recent replaced first.
  mutable std::array<SelectionMemo, 8> selection_memo{};
  mutable std::uint32_t selection_memo_next = 0;
  // The last call whose own checks passed (core/checked_call_memo.h).
  CheckedCallMemo checked_call;

  // What the algorithms and transports keep between calls, one slot per
  // type (the node's shared-memory segment, transport/shm/node_segment.h;
  // NCCL's communicators, algorithms/nccl/nccl_resources.h). Released first
  // by release().
  ResourceSlots resources;

  // The thread that runs this communicator's `_async` calls
  // (api/progress_engine.h), made on the first; null until then. Released
  // first by release(), after it finished every queued call.
  std::unique_ptr<AlgorithmResources> progress_engine;
  // The threads that run send_async and recv_async, one per peer and
  // direction (api/point_to_point.cc), made on first use: started calls
  // with different peers or directions progress at once, beside the
  // collectives, and those of one peer and direction in order. Released by
  // release() after the progress engine, each once its queue is done.
  std::vector<std::unique_ptr<AlgorithmResources>> point_to_point_engines;
  // The first failure of a send or recv (started or blocking, on any of
  // those threads or the caller's): every later send and recv raises it.
  // The collectives go on: no message of a send or recv can match theirs
  // (their tags differ).
  std::atomic<bool> point_to_point_failed{false};
  std::mutex point_to_point_failure_mutex;
  std::string point_to_point_failure;

 private:
  void learn_peers(const char* operation);
};

}  // namespace collective::internal
