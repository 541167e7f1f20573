#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "api/communicator_topology.h"
#include "api/flight_recorder_attach.h"
#include "api/progress_engine.h"
#include "collective/communicator.h"
#include "collective/errors.h"
#include "core/blocking_call_watch.h"
#include "core/communicator_creation.h"
#include "core/communicator_state.h"
#include "core/env_params.h"
#include "core/exclusive_use.h"
#include "core/failure_agreement.h"
#include "core/failure_record.h"
#include "core/flight_recorder.h"
#include "core/log.h"
#include "core/mpi_check.h"
#include "core/mpi_lifetime.h"
#include "core/mpi_thread_level.h"

namespace collective {
namespace {

using internal::CommunicatorState;

constexpr const char* kOperation = "Communicator::shrink";
// MPI_Comm_create_group's tag: only the survivors' calls meet there.
constexpr int kCreateGroupTag = 7411;

std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream text;
  for (std::size_t i = 0; i < ranks.size(); ++i) text << (i > 0 ? ", " : "") << ranks[i];
  return text.str();
}

// The survivors' MPI communicator, made by MPI_Comm_create_group, which is
// collective over the survivors only. It blocks, and Open MPI 4.1 never
// returns from it when one of them dies meanwhile: a watch over the
// survivors on this host ends the process then (core/blocking_call_watch.h).
MPI_Comm create_survivors_comm(const CommunicatorState& self, const std::vector<int>& failed) {
  internal::WaitSubject survivors_watched(self.comm, self.rank);
  survivors_watched.liveness = self.liveness;
  for (const int rank : failed) survivors_watched.liveness.forget(rank);
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Group survivors = MPI_GROUP_NULL;
  MPI_Comm shrunk = MPI_COMM_NULL;
  const internal::BlockingCallWatch watch(kOperation, survivors_watched, "MPI_Comm_create_group");
  const internal::MpiLock lock;
  internal::check_mpi(MPI_Comm_group(self.comm, &group), "MPI_Comm_group", kOperation, self.rank);
  const int rc = MPI_Group_excl(group, static_cast<int>(failed.size()), failed.data(), &survivors);
  MPI_Group_free(&group);
  internal::check_mpi(rc, "MPI_Group_excl", kOperation, self.rank);
  const int created = MPI_Comm_create_group(self.comm, survivors, kCreateGroupTag, &shrunk);
  MPI_Group_free(&survivors);
  internal::check_mpi(created, "MPI_Comm_create_group", kOperation, self.rank);
  return shrunk;
}

}  // namespace

Communicator Communicator::shrink() const {
  CommunicatorState& self = state();
  if (self.size == 0) {
    throw InvalidArgumentError(kOperation, -1,
                               "the communicator is null: this rank belongs to no group");
  }
  if (self.freed) throw InvalidArgumentError(kOperation, self.rank, "the communicator was freed");
  internal::require_mpi_running(kOperation, self.rank);
  internal::require_mpi_thread(kOperation, self.rank);
  (void)internal::env_params();
  // Calls in flight end first (program order); those that failed say so
  // through their own Work.
  try {
    internal::finish_work_in_flight(self);
  } catch (const Error&) {
  }
  const internal::ExclusiveUse exclusive(self, internal::ExclusiveUse::Operation::kShrink);
  // Below MPI_THREAD_MULTIPLE one making of a communicator at a time
  // (core/communicator_creation.h); the ranks cannot agree on the turn over
  // a communicator with a dead member, so a rank without it refuses alone
  // and the others time out naming it.
  const internal::CreationTurn creation_turn;
  if (!creation_turn.held()) {
    throw InvalidArgumentError(kOperation, self.rank,
                               "another thread of this process is making a communicator (below "
                               "MPI_THREAD_MULTIPLE one at a time): call shrink once it is done");
  }
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> failed = internal::agree_on_failed_ranks(
      self, self.size, self.failed_ranks, ++self.shrinks, kOperation);
  const auto agreed = std::chrono::steady_clock::now();
  if (!failed.empty()) {
    // A death this rank learns only here fails the communicator as one seen
    // in a call does; later calls name every rank agreed failed.
    self.poison(PeerFailedError(
        kOperation, self.rank, "the survivors agreed that rank(s) " + rank_list(failed) + " failed",
        failed));
    self.failed_ranks = failed;
    if (self.flight_recorder) self.flight_recorder->note_lost(failed);
    internal::record_communication_failure(kOperation + std::string(": rank(s) ") +
                                           rank_list(failed) + " failed");
    internal::record_peer_loss(kOperation + std::string(" (rank ") + std::to_string(self.rank) +
                               "): the survivors agreed that rank(s) " + rank_list(failed) +
                               " failed");
  }
  const MPI_Comm shrunk = create_survivors_comm(self, failed);
  auto state = std::make_shared<CommunicatorState>(shrunk, kOperation);
  std::vector<int> members;
  for (int rank = 0; rank < self.size; ++rank) {
    if (std::find(failed.begin(), failed.end(), rank) == failed.end()) members.push_back(rank);
  }
  if (self.topology) {
    internal::attach_survivors_topology(*state, *self.topology, members, kOperation);
  } else {
    internal::attach_topology(*state, kOperation);
  }
  internal::attach_flight_recorder(*state, self.flight_recorder ? self.flight_recorder->id() : "");
  const auto made = std::chrono::steady_clock::now();
  using Ms = std::chrono::duration<double, std::milli>;
  if (self.flight_recorder && state->flight_recorder) {
    self.flight_recorder->note_shrink(state->flight_recorder->id(), Ms(agreed - start).count(),
                                      Ms(made - agreed).count());
  }
  if (!failed.empty()) {
    std::ostringstream text;
    text << kOperation << " (rank " << self.rank << "): rank(s) " << rank_list(failed)
         << " failed; " << state->size << " survivors agreed in " << Ms(agreed - start).count()
         << " ms and made their communicator in " << Ms(made - agreed).count()
         << " ms; this rank is rank " << state->rank << " of it";
    COLLECTIVE_LOG(kWarn, text.str());
    // The dump written at the failure predates the shrink: this one holds
    // both communicators, for collective_trace.
    internal::dump_flight_records_noexcept(text.str());
  }
  return Communicator(std::move(state));
}

std::vector<int> Communicator::failed_ranks() const { return state().failed_ranks; }

}  // namespace collective
