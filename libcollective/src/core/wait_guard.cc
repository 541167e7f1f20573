#include "core/wait_guard.h"

#include "core/mpi_thread_level.h"

#include <algorithm>
#include <sstream>

#include "collective/errors.h"
#include "core/env_params.h"
#include "core/failure_record.h"
#include "core/launcher_recovery.h"
#include "core/log.h"

namespace collective::internal {
namespace {

double seconds(std::chrono::milliseconds duration) {
  return static_cast<double>(duration.count()) / 1000.0;
}

}  // namespace

WaitGuard::WaitGuard(const Request& request, const WaitSubject& state, const char* who)
    : request_(&request),
      state_(&state),
      abort_flag_(&state.called().abort_flag),
      rank_(state.shown(state.rank)),
      who_(who),
      timeout_(request.timeout),
      start_(request.deadline - request.timeout),
      deadline_(request.deadline),
      tight_polls_(state.node_oversubscribed ? 0 : kTightPolls) {}

WaitGuard::WaitGuard(const char* operation, int rank, std::chrono::milliseconds timeout,
                     const WaitSubject* state, const char* who)
    : operation_(operation),
      state_(state),
      abort_flag_(state != nullptr ? &state->called().abort_flag : nullptr),
      rank_(state != nullptr ? state->shown(rank) : rank),
      who_(who),
      timeout_(timeout),
      start_(Clock::now()),
      deadline_(start_ + timeout),
      tight_polls_(state != nullptr && state->node_oversubscribed ? 0 : kTightPolls) {}

void WaitGuard::arm() {
  armed_ = true;
  // A step's waits are noted with the call they are part of.
  if (state_ != nullptr && state_->called().flight_recorder) {
    dump_generation_seen_ = &state_->called().flight_recorder->dump_generation_seen;
  }
  const double fraction = env_params().stall_warning_fraction;
  warn_at_ = fraction > 0
                 ? start_ + std::chrono::duration_cast<Clock::duration>(timeout_ * fraction)
                 : Clock::time_point::max();
  // A rank on this host that died is noticed within the interval once a
  // wait has lasted that long; faster waits never look at /proc.
  liveness_interval_ = env_params().peer_check_interval;
  next_liveness_check_ = state_ != nullptr && !state_->called().liveness.empty()
                             ? start_ + liveness_interval_
                             : Clock::time_point::max();
  next_check_ = std::min({deadline_, warn_at_, next_liveness_check_});
  // Counted from the start: the first idle turn past the tight polls lets
  // MPI progress at once when the wait began late in a long call.
  next_progress_ = start_ + kProgressInterval;
}

void WaitGuard::drive_mpi_progress() const {
  if (state_ == nullptr || state_->comm == MPI_COMM_NULL) return;
  // A probe runs MPI's progress engine (both Open MPI and MPICH poll every
  // transport in it) and consumes nothing.
  int flag = 0;
  const MpiLock lock;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, state_->comm, &flag, MPI_STATUS_IGNORE);
}

std::string WaitGuard::label() const {
  return request_ != nullptr ? request_->label() : std::string(operation_);
}

std::string WaitGuard::ranks_text(const std::vector<int>& ranks) const {
  std::ostringstream text;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) text << (i + 1 == ranks.size() ? " and " : ", ");
    if (state_ != nullptr && !state_->liveness.empty()) {
      text << state_->liveness.describe(ranks[i], state_->shown(ranks[i]))
           << state_->liveness.status_note(ranks[i]);
    } else {
      text << "rank " << (state_ != nullptr ? state_->shown(ranks[i]) : ranks[i]);
    }
  }
  return text.str();
}

void WaitGuard::checkpoint(const Describer& describe) {
  const Clock::time_point now = Clock::now();
  if (now >= deadline_) {
    // A waiter that first looks past the deadline (its process lost the
    // processor on a loaded machine) still warns first, as promised.
    if (!warned_ && warn_at_ != Clock::time_point::max()) {
      warned_ = true;
      warn_stall(describe(), now);
    }
    fail_timeout(describe());
  }
  if (now >= next_liveness_check_) {
    next_liveness_check_ = now + liveness_interval_;
    // Every rank of the communicator called, not only those awaited: a peer
    // that saw a death and gave the call up leaves its partners waiting.
    const std::vector<int> gone = state_->called().liveness.gone();
    if (!gone.empty()) fail_dead_peers(gone, describe());
  }
  if (!warned_ && now >= warn_at_) {
    warned_ = true;
    warn_stall(describe(), now);
  }
  next_check_ =
      std::min({deadline_, warned_ ? Clock::time_point::max() : warn_at_, next_liveness_check_});
}

void WaitGuard::end_traced_wait() {
  // Named after the loop ("wait: ring"); the name must be static, so the
  // phrase goes in the detail.
  const std::int64_t last =
      std::chrono::duration_cast<std::chrono::nanoseconds>(trace_wait_last_.time_since_epoch())
          .count();
  trace_slice("wait", "wait", trace_wait_start_ns_, std::max(last, trace_wait_start_ns_), who_);
  trace_wait_start_ns_ = 0;
}

void WaitGuard::note_wait(const WaitTarget& target) const {
  // The recorder keeps collectives by sequence number; a point-to-point
  // call's number counts its pair's calls, not the collectives.
  if (request_ == nullptr || request_->point_to_point != nullptr || state_ == nullptr ||
      !state_->called().flight_recorder) {
    return;
  }
  std::vector<int> shown(target.ranks.size());
  for (std::size_t i = 0; i < shown.size(); ++i) shown[i] = state_->shown(target.ranks[i]);
  state_->called().flight_recorder->note_wait(request_->sequence, who_, shown, target.what);
}

void WaitGuard::answer_dump_request(const Describer& describe) {
  dump_generation_seen_->store(dump_request_generation(), std::memory_order_relaxed);
  note_wait(describe());
}

void WaitGuard::fail_abort() const {
  const std::string reason = state_->called().abort_reason();
  const CommunicationError error(
      label(), rank_,
      "aborted by Communicator::abort while " + std::string(who_) + " waited: " + reason);
  record_communication_failure(error.what());
  throw error;
}

void WaitGuard::fail_timeout(const WaitTarget& target) const {
  note_wait(target);
  std::ostringstream cause;
  cause << "timed out after " << seconds(timeout_) << " s (" << who_ << ") waiting for ";
  if (!target.ranks.empty()) cause << ranks_text(target.ranks) << ": ";
  cause << target.what << "; a rank that has not reached this call, is stalled or died"
        << " (COLLECTIVE_TIMEOUT or the timeout option sets the limit)";
  const TimeoutError error(label(), rank_, cause.str());
  record_communication_failure(error.what());
  throw error;
}

void WaitGuard::fail_dead_peers(const std::vector<int>& ranks, const WaitTarget& target) const {
  note_wait(target);
  // Every dead rank is named: a survivor that already failed and left may
  // be among them, next to the rank that died first.
  // `ranks` are the called communicator's; the target's are this one's.
  const WaitSubject& called = state_->called();
  std::ostringstream cause;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) cause << (i + 1 == ranks.size() ? " and " : ", ");
    cause << called.liveness.describe(ranks[i], called.shown(ranks[i]));
  }
  cause << (ranks.size() == 1 ? " died: its process is gone ("
                              : " died: their processes are gone (")
        << who_ << " was waiting for ";
  for (std::size_t i = 0; i < target.ranks.size(); ++i) {
    cause << (i == 0 ? "rank " : ", ") << state_->shown(target.ranks[i]);
  }
  cause << (target.ranks.empty() ? "" : ": ") << target.what << ")" << launcher_recovery_note();
  // Named by the ranks of the communicator the user called.
  std::vector<int> failed(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) failed[i] = called.shown(ranks[i]);
  std::sort(failed.begin(), failed.end());
  const PeerFailedError error(label(), rank_, cause.str(), failed);
  record_communication_failure(error.what());
  record_peer_loss(error.what());
  throw error;
}

void WaitGuard::warn_stall(const WaitTarget& target, Clock::time_point now) const {
  note_wait(target);
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start_);
  COLLECTIVE_LOG(kWarn, label() << ": stalled for " << seconds(waited) << " s of the "
                                << seconds(timeout_) << " s timeout (" << who_ << ") waiting for "
                                << (target.ranks.empty() ? "" : ranks_text(target.ranks) + ": ")
                                << target.what);
}

}  // namespace collective::internal
