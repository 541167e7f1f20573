#include "collective/communicator.h"

#include <mpi.h>

#include <string>
#include <vector>

#include "collective/errors.h"
#include "core/communicator_state.h"
#include "api/dispatch.h"
#include "api/async_start.h"
#include "api/plan_state.h"
#include "api/prepared_call.h"
#include "api/progress_engine.h"
#include "api/fortran_handle.h"
#include "api/communicator_making.h"
#include "core/communicator_creation.h"
#include "core/exclusive_use.h"
#include "core/flight_recorder.h"
#include "core/trace.h"
#include "core/env_params.h"
#include "core/log.h"
#include "core/mpi_check.h"
#include "core/mpi_lifetime.h"
#include "core/mpi_thread_level.h"
#include "core/wait_guard.h"
#include "transport/shm/shared_allocation.h"
#include "api/communicator_topology.h"
#include "api/flight_recorder_attach.h"

namespace collective {
namespace {

using internal::CommunicatorState;
using internal::Request;

using internal::kNullCommunicator;
using internal::require_can_make_communicator;

// Waits for a non-blocking MPI operation that needs every rank of the
// parent communicator, within COLLECTIVE_TIMEOUT: a rank that never calls
// fails the others with a TimeoutError instead of blocking them forever.
void wait_for_all_ranks(MPI_Request& request, const char* operation, int rank, const char* what) {
  internal::WaitGuard guard(operation, rank, internal::env_params().timeout, nullptr, what);
  int done = 0;
  while (true) {
    {
      const internal::MpiLock lock;
      internal::check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test", operation,
                          rank);
    }
    if (done) return;
    guard.idle([&] {
      return internal::WaitTarget{
          {}, std::string("every rank of the parent communicator to call ") + operation};
    });
  }
}

std::shared_ptr<CommunicatorState> duplicate(MPI_Comm parent, const char* operation) {
  MPI_Comm copy = MPI_COMM_NULL;
  // MPI_COMM_WORLD's default handler aborts; ask for return codes on the
  // duplicate (set in CommunicatorState) and check this call by hand.
  int rank = -1;
  {
    const internal::MpiLock lock;
    MPI_Comm_rank(parent, &rank);
  }
  internal::require_mpi_thread(operation, rank);
  // A malformed COLLECTIVE_* variable raises here, before MPI is asked for
  // anything that would then be left half done.
  (void)internal::env_params();
  internal::watch_mpi_finalize();
  // One duplication of `parent` at a time in this process, and below
  // MPI_THREAD_MULTIPLE one making of any communicator at a time
  // (core/communicator_creation.h).
  const internal::ParentTurn parent_turn(parent);
  const internal::CreationTurn creation_turn;
  internal::agree_on_creation_turn(creation_turn, parent, operation, rank);
  MPI_Request request = MPI_REQUEST_NULL;
  {
    const internal::MpiLock lock;
    internal::check_mpi(MPI_Comm_idup(parent, &copy, &request), "MPI_Comm_idup", operation, rank);
  }
  wait_for_all_ranks(request, operation, rank, "MPI_Comm_idup");
  auto state = std::make_shared<CommunicatorState>(copy, operation);
  internal::attach_topology(*state, operation);
  internal::attach_flight_recorder(*state);
  return state;
}

Request make_request(CollectiveKind kind, const void* send, void* recv, std::size_t count,
                     DataType type) {
  Request request;
  request.kind = kind;
  request.send = send;
  request.recv = recv;
  request.count = count;
  request.type = type;
  return request;
}

}  // namespace

Communicator::Communicator(std::shared_ptr<CommunicatorState> state) : state_(std::move(state)) {}

Communicator::~Communicator() = default;

Communicator Communicator::world() {
  internal::require_mpi_running("Communicator::world", -1);
  int rank = 0;
  {
    const internal::MpiLock lock;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  }
  internal::set_log_rank(rank);
  return Communicator(duplicate(MPI_COMM_WORLD, "Communicator::world"));
}

Communicator Communicator::from_mpi(int mpi_fortran_handle) {
  internal::require_mpi_running("Communicator::from_mpi", -1);
  MPI_Comm comm = MPI_COMM_NULL;
  int world_rank = 0;
  {
    // The check swaps MPI_COMM_WORLD's error handler for a moment: no other
    // MPI call of the library may run meanwhile below MULTIPLE.
    const internal::MpiLock lock;
    comm = internal::intracommunicator_from_fortran_handle(mpi_fortran_handle,
                                                           "Communicator::from_mpi");
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  }
  // Log lines name the world rank, as after world(): a program that only
  // hands its own communicators in (the C API, the MPI drop-in) made none.
  internal::set_log_rank(world_rank);
  return Communicator(duplicate(comm, "Communicator::from_mpi"));
}

int Communicator::to_mpi() const {
  CommunicatorState& self = state();
  constexpr const char* kOperation = "Communicator::to_mpi";
  require_can_make_communicator(self, kOperation);
  internal::finish_work_in_flight(self);  // program order
  const internal::ExclusiveUse exclusive(self, internal::ExclusiveUse::Operation::kSplit);
  // As every making of a communicator: one duplication of this one at a
  // time, and below MPI_THREAD_MULTIPLE one making at a time.
  const internal::ParentTurn parent_turn(self.comm);
  const internal::CreationTurn creation_turn;
  internal::agree_on_creation_turn(creation_turn, self.comm, kOperation, self.rank);
  MPI_Comm copy = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  {
    const internal::MpiLock lock;
    internal::check_mpi(MPI_Comm_idup(self.comm, &copy, &request), "MPI_Comm_idup", kOperation,
                        self.rank);
  }
  wait_for_all_ranks(request, kOperation, self.rank, "MPI_Comm_idup");
  {
    // The duplicate inherits the library's MPI_ERRORS_RETURN; the caller's
    // communicator gets MPI's default.
    const internal::MpiLock lock;
    MPI_Comm_set_errhandler(copy, MPI_ERRORS_ARE_FATAL);
  }
  return MPI_Comm_c2f(copy);
}

internal::CommunicatorState& Communicator::state() const {
  if (!state_) {
    throw InvalidArgumentError("Communicator", -1, "use of a moved-from Communicator");
  }
  return *state_;
}

Communicator Communicator::split(int color, int key) const {
  CommunicatorState& self = state();
  constexpr const char* kOperation = "Communicator::split";
  require_can_make_communicator(self, kOperation);
  (void)internal::env_params();           // a malformed variable raises before any MPI call
  internal::finish_work_in_flight(self);  // program order
  const internal::ExclusiveUse exclusive(self, internal::ExclusiveUse::Operation::kSplit);
  // Below MPI_THREAD_MULTIPLE one making at a time (core/communicator_creation.h).
  const internal::CreationTurn creation_turn;
  internal::agree_on_creation_turn(creation_turn, self.comm, kOperation, self.rank);
  // Every rank's color, on every rank. MPI has no non-blocking split: this
  // exchange first makes sure, within the timeout, that every rank has
  // arrived (so MPI_Comm_split cannot block on a rank that never comes),
  // and it lets every rank refuse a bad color together, before MPI (whose
  // error handler may abort the job) sees it. A negative color other than
  // the undefined one is refused; no message is left in flight, so the
  // communicator stays usable.
  const bool undefined = color == kUndefinedColor || color == MPI_UNDEFINED;
  int mine = undefined ? kUndefinedColor : color;
  std::vector<int> colors(static_cast<std::size_t>(self.size));
  MPI_Request arrival = MPI_REQUEST_NULL;
  {
    const internal::MpiLock lock;
    internal::check_mpi(
        MPI_Iallgather(&mine, 1, MPI_INT, colors.data(), 1, MPI_INT, self.comm, &arrival),
        "MPI_Iallgather", kOperation, self.rank);
  }
  wait_for_all_ranks(arrival, kOperation, self.rank, "every rank's color before MPI_Comm_split");
  std::string refused;
  for (int r = 0; r < self.size; ++r) {
    const int theirs = colors[static_cast<std::size_t>(r)];
    if (theirs >= 0 || theirs == kUndefinedColor) continue;
    refused += (refused.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) +
               " passed color " + std::to_string(theirs);
  }
  if (!refused.empty()) {
    throw InvalidArgumentError(kOperation, self.rank,
                               refused +
                                   ": a color is >= 0, or Communicator::kUndefinedColor (or "
                                   "MPI_UNDEFINED) for a rank that joins no group; no rank split");
  }
  MPI_Comm child = MPI_COMM_NULL;
  {
    // Blocking, but every rank has arrived (the exchange above) and, below
    // MULTIPLE, holds its creation turn: no other blocking call can hold
    // up a rank that this one waits for.
    const internal::MpiLock lock;
    internal::check_mpi(MPI_Comm_split(self.comm, undefined ? MPI_UNDEFINED : color, key, &child),
                        "MPI_Comm_split", kOperation, self.rank);
  }
  if (child == MPI_COMM_NULL) {
    // This rank is in no group, as MPI returns MPI_COMM_NULL: a state with
    // no MPI communicator, size 0 and rank -1, that refuses every call.
    auto null_state = std::make_shared<CommunicatorState>(std::shared_ptr<const Topology>(), -1);
    null_state->rank = -1;
    null_state->size = 0;
    return Communicator(std::move(null_state));
  }
  auto state = std::make_shared<CommunicatorState>(child, kOperation);
  internal::attach_topology(*state, kOperation);
  internal::attach_flight_recorder(*state);
  return Communicator(std::move(state));
}

bool Communicator::is_null() const { return state().size == 0; }

int Communicator::rank() const { return state().rank; }
int Communicator::size() const { return state().size; }

const Topology& Communicator::topology() const {
  CommunicatorState& self = state();
  if (self.size == 0) throw InvalidArgumentError("Communicator::topology", -1, kNullCommunicator);
  if (!self.topology) {
    throw InvalidArgumentError("Communicator::topology", self.rank,
                               "the communicator has no topology");
  }
  return *self.topology;
}

void* Communicator::allocate(std::size_t bytes) {
  if (state().size == 0)
    throw InvalidArgumentError("Communicator::allocate", -1, kNullCommunicator);
  return internal::shared_allocations().allocate(bytes, state().rank);
}

void Communicator::deallocate(void* memory) {
  if (state().size == 0) {
    throw InvalidArgumentError("Communicator::deallocate", -1, kNullCommunicator);
  }
  internal::shared_allocations().deallocate(memory, state().rank);
}

Algorithm to_algorithm(CollectiveCommunication communication) {
  switch (communication) {
    case CollectiveCommunication::kAuto: return Algorithm::kAuto;
    case CollectiveCommunication::kRing: return Algorithm::kRing;
    case CollectiveCommunication::kNccl: return Algorithm::kNccl;
  }
  throw InvalidArgumentError(
      "to_algorithm", -1,
      "unknown CollectiveCommunication value " + std::to_string(static_cast<int>(communication)));
}

// Each collective's request, built once for its blocking and `_async` forms.
namespace {

Request all_reduce_request(const void* send, void* recv, std::size_t count, DataType type,
                           const AllReduceOptions& options) {
  Request request = make_request(CollectiveKind::kAllReduce, send, recv, count, type);
  request.op = options.op;
  request.deterministic = options.deterministic;
  return request;
}

Request reduce_scatter_request(const void* send, void* recv, std::size_t recv_count, DataType type,
                               const ReduceScatterOptions& options) {
  Request request = make_request(CollectiveKind::kReduceScatter, send, recv, recv_count, type);
  request.op = options.op;
  request.deterministic = options.deterministic;
  return request;
}

Request broadcast_request(void* buffer, std::size_t count, DataType type,
                          const BroadcastOptions& options) {
  Request request = make_request(CollectiveKind::kBroadcast, buffer, buffer, count, type);
  request.root = options.root;
  return request;
}

Request reduce_request(const void* send, void* recv, std::size_t count, DataType type,
                       const ReduceOptions& options) {
  Request request = make_request(CollectiveKind::kReduce, send, recv, count, type);
  request.op = options.op;
  request.root = options.root;
  request.deterministic = options.deterministic;
  return request;
}

Request barrier_request() {
  return make_request(CollectiveKind::kBarrier, nullptr, nullptr, 0, DataType::kUInt8);
}

Request all_to_all_v_request(const void* send, std::span<const std::size_t> send_counts,
                             std::span<const std::size_t> send_displacements, void* recv,
                             std::span<const std::size_t> recv_counts,
                             std::span<const std::size_t> recv_displacements, DataType type) {
  Request request = make_request(CollectiveKind::kAllToAllV, send, recv, 0, type);
  // In place, the send side is recv's layout. The test is Request::in_place's:
  // null buffers (zero counts) are not in place, and their send spans are read.
  if (!request.in_place(0)) {
    request.send_counts = send_counts;
    request.send_displacements = send_displacements;
  }
  request.recv_counts = recv_counts;
  request.recv_displacements = recv_displacements;
  return request;
}

Request all_gather_v_request(const void* send, std::size_t send_count, void* recv,
                             std::span<const std::size_t> recv_counts,
                             std::span<const std::size_t> recv_displacements, DataType type) {
  Request request = make_request(CollectiveKind::kAllGatherV, send, recv, send_count, type);
  request.recv_counts = recv_counts;
  request.recv_displacements = recv_displacements;
  return request;
}

Request reduce_scatter_v_request(const CommunicatorState& state, const void* send, void* recv,
                                 std::span<const std::size_t> recv_counts, DataType type,
                                 const ReduceScatterOptions& options) {
  // The count of this rank's block, for the logs and the single-rank copy;
  // a recv_counts of the wrong length is refused by the argument checks.
  const int rank = state.rank;
  const std::size_t own =
      rank >= 0 && static_cast<std::size_t>(rank) < recv_counts.size() ? recv_counts[rank] : 0;
  Request request = make_request(CollectiveKind::kReduceScatterV, send, recv, own, type);
  request.recv_counts = recv_counts;
  request.op = options.op;
  request.deterministic = options.deterministic;
  return request;
}

Request rooted_request(CollectiveKind kind, const void* send, void* recv, std::size_t count,
                       DataType type, int root) {
  Request request = make_request(kind, send, recv, count, type);
  request.root = root;
  return request;
}

Request gather_v_request(const CommunicatorState& state, const void* send, std::size_t send_count,
                         void* recv, std::span<const std::size_t> recv_counts,
                         std::span<const std::size_t> recv_displacements, DataType type,
                         const GatherOptions& options) {
  Request request =
      rooted_request(CollectiveKind::kGatherV, send, recv, send_count, type, options.root);
  if (state.rank == options.root) {  // ignored elsewhere
    request.recv_counts = recv_counts;
    request.recv_displacements = recv_displacements;
  }
  return request;
}

Request scatter_v_request(const CommunicatorState& state, const void* send,
                          std::span<const std::size_t> send_counts,
                          std::span<const std::size_t> send_displacements, void* recv,
                          std::size_t recv_count, DataType type, const ScatterOptions& options) {
  Request request =
      rooted_request(CollectiveKind::kScatterV, send, recv, recv_count, type, options.root);
  if (state.rank == options.root) {  // ignored elsewhere
    request.send_counts = send_counts;
    request.send_displacements = send_displacements;
  }
  return request;
}

// The blocking form: after the calls in flight on the communicator (program
// order), on the caller's thread.
void run_blocking(CommunicatorState& state, Request request, const CommonOptions& options) {
  internal::finish_work_in_flight(state);
  internal::run_collective(state, request, options);
}

}  // namespace

void Communicator::all_reduce(const void* send, void* recv, std::size_t count, DataType type,
                              const AllReduceOptions& options) {
  run_blocking(state(), all_reduce_request(send, recv, count, type, options), options);
}

void Communicator::reduce_scatter(const void* send, void* recv, std::size_t recv_count,
                                  DataType type, const ReduceScatterOptions& options) {
  run_blocking(state(), reduce_scatter_request(send, recv, recv_count, type, options), options);
}

void Communicator::all_gather(const void* send, void* recv, std::size_t send_count, DataType type,
                              const AllGatherOptions& options) {
  run_blocking(state(), make_request(CollectiveKind::kAllGather, send, recv, send_count, type),
               options);
}

void Communicator::broadcast(void* buffer, std::size_t count, DataType type,
                             const BroadcastOptions& options) {
  run_blocking(state(), broadcast_request(buffer, count, type, options), options);
}

void Communicator::reduce(const void* send, void* recv, std::size_t count, DataType type,
                          const ReduceOptions& options) {
  run_blocking(state(), reduce_request(send, recv, count, type, options), options);
}

void Communicator::barrier(const BarrierOptions& options) {
  run_blocking(state(), barrier_request(), options);
}

void Communicator::all_to_all(const void* send, void* recv, std::size_t count, DataType type,
                              const AllToAllOptions& options) {
  run_blocking(state(), make_request(CollectiveKind::kAllToAll, send, recv, count, type), options);
}

void Communicator::all_to_all_v(const void* send, std::span<const std::size_t> send_counts,
                                std::span<const std::size_t> send_displacements, void* recv,
                                std::span<const std::size_t> recv_counts,
                                std::span<const std::size_t> recv_displacements, DataType type,
                                const AllToAllOptions& options) {
  run_blocking(state(),
               all_to_all_v_request(send, send_counts, send_displacements, recv, recv_counts,
                                    recv_displacements, type),
               options);
}

void Communicator::all_gather_v(const void* send, std::size_t send_count, void* recv,
                                std::span<const std::size_t> recv_counts,
                                std::span<const std::size_t> recv_displacements, DataType type,
                                const AllGatherOptions& options) {
  run_blocking(state(),
               all_gather_v_request(send, send_count, recv, recv_counts, recv_displacements, type),
               options);
}

void Communicator::reduce_scatter_v(const void* send, void* recv,
                                    std::span<const std::size_t> recv_counts, DataType type,
                                    const ReduceScatterOptions& options) {
  run_blocking(state(), reduce_scatter_v_request(state(), send, recv, recv_counts, type, options),
               options);
}

void Communicator::gather(const void* send, void* recv, std::size_t send_count, DataType type,
                          const GatherOptions& options) {
  run_blocking(state(),
               rooted_request(CollectiveKind::kGather, send, recv, send_count, type, options.root),
               options);
}

void Communicator::gather_v(const void* send, std::size_t send_count, void* recv,
                            std::span<const std::size_t> recv_counts,
                            std::span<const std::size_t> recv_displacements, DataType type,
                            const GatherOptions& options) {
  run_blocking(state(),
               gather_v_request(state(), send, send_count, recv, recv_counts, recv_displacements,
                                type, options),
               options);
}

void Communicator::scatter(const void* send, void* recv, std::size_t recv_count, DataType type,
                           const ScatterOptions& options) {
  run_blocking(state(),
               rooted_request(CollectiveKind::kScatter, send, recv, recv_count, type, options.root),
               options);
}

void Communicator::scatter_v(const void* send, std::span<const std::size_t> send_counts,
                             std::span<const std::size_t> send_displacements, void* recv,
                             std::size_t recv_count, DataType type, const ScatterOptions& options) {
  run_blocking(state(),
               scatter_v_request(state(), send, send_counts, send_displacements, recv, recv_count,
                                 type, options),
               options);
}

Plan Communicator::all_reduce_init(const void* send, void* recv, std::size_t count, DataType type,
                                   const AllReduceOptions& options) {
  return Plan(internal::prepare_plan(state_, all_reduce_request(send, recv, count, type, options),
                                     options));
}

Work Communicator::all_reduce_async(const void* send, void* recv, std::size_t count, DataType type,
                                    const AllReduceOptions& options) {
  return Work(internal::start_async(state(), all_reduce_request(send, recv, count, type, options),
                                    options));
}

Work Communicator::reduce_scatter_async(const void* send, void* recv, std::size_t recv_count,
                                        DataType type, const ReduceScatterOptions& options) {
  return Work(internal::start_async(
      state(), reduce_scatter_request(send, recv, recv_count, type, options), options));
}

Work Communicator::all_gather_async(const void* send, void* recv, std::size_t send_count,
                                    DataType type, const AllGatherOptions& options) {
  return Work(internal::start_async(
      state(), make_request(CollectiveKind::kAllGather, send, recv, send_count, type), options));
}

Work Communicator::broadcast_async(void* buffer, std::size_t count, DataType type,
                                   const BroadcastOptions& options) {
  return Work(
      internal::start_async(state(), broadcast_request(buffer, count, type, options), options));
}

Work Communicator::reduce_async(const void* send, void* recv, std::size_t count, DataType type,
                                const ReduceOptions& options) {
  return Work(
      internal::start_async(state(), reduce_request(send, recv, count, type, options), options));
}

Work Communicator::barrier_async(const BarrierOptions& options) {
  return Work(internal::start_async(state(), barrier_request(), options));
}

Work Communicator::all_to_all_async(const void* send, void* recv, std::size_t count, DataType type,
                                    const AllToAllOptions& options) {
  return Work(internal::start_async(
      state(), make_request(CollectiveKind::kAllToAll, send, recv, count, type), options));
}

Work Communicator::all_to_all_v_async(const void* send, std::span<const std::size_t> send_counts,
                                      std::span<const std::size_t> send_displacements, void* recv,
                                      std::span<const std::size_t> recv_counts,
                                      std::span<const std::size_t> recv_displacements,
                                      DataType type, const AllToAllOptions& options) {
  return Work(
      internal::start_async(state(),
                            all_to_all_v_request(send, send_counts, send_displacements, recv,
                                                 recv_counts, recv_displacements, type),
                            options));
}

Work Communicator::all_gather_v_async(const void* send, std::size_t send_count, void* recv,
                                      std::span<const std::size_t> recv_counts,
                                      std::span<const std::size_t> recv_displacements,
                                      DataType type, const AllGatherOptions& options) {
  return Work(internal::start_async(
      state(), all_gather_v_request(send, send_count, recv, recv_counts, recv_displacements, type),
      options));
}

Work Communicator::reduce_scatter_v_async(const void* send, void* recv,
                                          std::span<const std::size_t> recv_counts, DataType type,
                                          const ReduceScatterOptions& options) {
  return Work(internal::start_async(
      state(), reduce_scatter_v_request(state(), send, recv, recv_counts, type, options), options));
}

Work Communicator::gather_async(const void* send, void* recv, std::size_t send_count, DataType type,
                                const GatherOptions& options) {
  return Work(internal::start_async(
      state(), rooted_request(CollectiveKind::kGather, send, recv, send_count, type, options.root),
      options));
}

Work Communicator::gather_v_async(const void* send, std::size_t send_count, void* recv,
                                  std::span<const std::size_t> recv_counts,
                                  std::span<const std::size_t> recv_displacements, DataType type,
                                  const GatherOptions& options) {
  return Work(internal::start_async(state(),
                                    gather_v_request(state(), send, send_count, recv, recv_counts,
                                                     recv_displacements, type, options),
                                    options));
}

Work Communicator::scatter_async(const void* send, void* recv, std::size_t recv_count,
                                 DataType type, const ScatterOptions& options) {
  return Work(internal::start_async(
      state(), rooted_request(CollectiveKind::kScatter, send, recv, recv_count, type, options.root),
      options));
}

Work Communicator::scatter_v_async(const void* send, std::span<const std::size_t> send_counts,
                                   std::span<const std::size_t> send_displacements, void* recv,
                                   std::size_t recv_count, DataType type,
                                   const ScatterOptions& options) {
  return Work(
      internal::start_async(state(),
                            scatter_v_request(state(), send, send_counts, send_displacements, recv,
                                              recv_count, type, options),
                            options));
}

// Persistent forms: the same request, prepared once (api/plan.cc).

Plan Communicator::reduce_scatter_init(const void* send, void* recv, std::size_t recv_count,
                                       DataType type, const ReduceScatterOptions& options) {
  return Plan(internal::prepare_plan(
      state_, reduce_scatter_request(send, recv, recv_count, type, options), options));
}

Plan Communicator::all_gather_init(const void* send, void* recv, std::size_t send_count,
                                   DataType type, const AllGatherOptions& options) {
  return Plan(internal::prepare_plan(
      state_, make_request(CollectiveKind::kAllGather, send, recv, send_count, type), options));
}

Plan Communicator::broadcast_init(void* buffer, std::size_t count, DataType type,
                                  const BroadcastOptions& options) {
  return Plan(
      internal::prepare_plan(state_, broadcast_request(buffer, count, type, options), options));
}

Plan Communicator::reduce_init(const void* send, void* recv, std::size_t count, DataType type,
                               const ReduceOptions& options) {
  return Plan(
      internal::prepare_plan(state_, reduce_request(send, recv, count, type, options), options));
}

Plan Communicator::barrier_init(const BarrierOptions& options) {
  return Plan(internal::prepare_plan(state_, barrier_request(), options));
}

Plan Communicator::all_to_all_init(const void* send, void* recv, std::size_t count, DataType type,
                                   const AllToAllOptions& options) {
  return Plan(internal::prepare_plan(
      state_, make_request(CollectiveKind::kAllToAll, send, recv, count, type), options));
}

Plan Communicator::all_to_all_v_init(const void* send, std::span<const std::size_t> send_counts,
                                     std::span<const std::size_t> send_displacements, void* recv,
                                     std::span<const std::size_t> recv_counts,
                                     std::span<const std::size_t> recv_displacements, DataType type,
                                     const AllToAllOptions& options) {
  return Plan(
      internal::prepare_plan(state_,
                             all_to_all_v_request(send, send_counts, send_displacements, recv,
                                                  recv_counts, recv_displacements, type),
                             options));
}

Plan Communicator::all_gather_v_init(const void* send, std::size_t send_count, void* recv,
                                     std::span<const std::size_t> recv_counts,
                                     std::span<const std::size_t> recv_displacements, DataType type,
                                     const AllGatherOptions& options) {
  return Plan(internal::prepare_plan(
      state_, all_gather_v_request(send, send_count, recv, recv_counts, recv_displacements, type),
      options));
}

Plan Communicator::reduce_scatter_v_init(const void* send, void* recv,
                                         std::span<const std::size_t> recv_counts, DataType type,
                                         const ReduceScatterOptions& options) {
  return Plan(internal::prepare_plan(
      state_, reduce_scatter_v_request(state(), send, recv, recv_counts, type, options), options));
}

Plan Communicator::gather_init(const void* send, void* recv, std::size_t send_count, DataType type,
                               const GatherOptions& options) {
  return Plan(internal::prepare_plan(
      state_, rooted_request(CollectiveKind::kGather, send, recv, send_count, type, options.root),
      options));
}

Plan Communicator::gather_v_init(const void* send, std::size_t send_count, void* recv,
                                 std::span<const std::size_t> recv_counts,
                                 std::span<const std::size_t> recv_displacements, DataType type,
                                 const GatherOptions& options) {
  return Plan(internal::prepare_plan(state_,
                                     gather_v_request(state(), send, send_count, recv, recv_counts,
                                                      recv_displacements, type, options),
                                     options));
}

Plan Communicator::scatter_init(const void* send, void* recv, std::size_t recv_count, DataType type,
                                const ScatterOptions& options) {
  return Plan(internal::prepare_plan(
      state_, rooted_request(CollectiveKind::kScatter, send, recv, recv_count, type, options.root),
      options));
}

Plan Communicator::scatter_v_init(const void* send, std::span<const std::size_t> send_counts,
                                  std::span<const std::size_t> send_displacements, void* recv,
                                  std::size_t recv_count, DataType type,
                                  const ScatterOptions& options) {
  return Plan(
      internal::prepare_plan(state_,
                             scatter_v_request(state(), send, send_counts, send_displacements, recv,
                                               recv_count, type, options),
                             options));
}

Algorithm Communicator::choose_algorithm(CollectiveKind kind, std::size_t count, DataType type,
                                         Algorithm requested, bool deterministic) const {
  constexpr const char* kOperation = "Communicator::choose_algorithm";
  if (state().size == 0) throw InvalidArgumentError(kOperation, -1, kNullCommunicator);
  // Its own arguments are checked here: past this point a bad value would
  // surface as the error of a collective call that is never made.
  auto refuse = [&](const char* what, const char* type_name, int value) {
    throw InvalidArgumentError(kOperation, state().rank,
                               std::string("unknown ") + what + " (" + type_name + " value " +
                                   std::to_string(value) + ")");
  };
  const int kind_value = static_cast<int>(kind);
  if (kind_value < 0 || kind_value >= kNumCollectiveKinds) {
    refuse("collective kind", "CollectiveKind", kind_value);
  }
  const int type_value = static_cast<int>(type);
  if (type_value < 0 || type_value >= kNumDataTypes) refuse("data type", "DataType", type_value);
  const int algorithm_value = static_cast<int>(requested);
  if (algorithm_value < 0 || algorithm_value >= kNumAlgorithms) {
    refuse("algorithm", "Algorithm", algorithm_value);
  }
  internal::finish_work_in_flight(state());  // AUTO's memo is the progress thread's meanwhile
  Request request = make_request(kind, nullptr, nullptr, count, type);
  request.deterministic = deterministic;  // kept for the reducing kinds only
  CommonOptions options;
  options.algorithm = requested;
  return internal::resolve_algorithm(state(), request, options);
}

Algorithm Communicator::last_algorithm() const {
  internal::finish_work_in_flight(state());  // written by the calls in flight
  return state().last_algorithm;
}

std::uint64_t Communicator::sequence_number() const { return state().next_sequence; }

void Communicator::free() {
  CommunicatorState& self = state();
  if (self.comm != MPI_COMM_NULL) internal::require_mpi_thread("Communicator::free", self.rank);
  internal::finish_work_in_flight(self);
  const internal::ExclusiveUse exclusive(self, internal::ExclusiveUse::Operation::kFree);
  self.release();
}

void Communicator::abort(const std::string& reason) { state().request_abort(reason); }

bool Communicator::aborted() const { return state().abort_requested(); }

}  // namespace collective
