// The rules every wait loop of the library follows, in one place, so that
// no wait can hang: spin briefly, then yield the processor (ranks may be
// oversubscribed), and where the loop can sleep until the awaited value
// changes (shared-memory flags), sleep once yielding has lasted
// sleep_after; stop at once when Communicator::abort was called; log
// one stall warning naming the awaited ranks at COLLECTIVE_STALL_WARNING of
// the timeout; fail fast when a rank on this host died; raise TimeoutError
// at the deadline. Every idle turn also lets MPI progress (see
// drive_mpi_progress), so no wait starves a peer of this rank's messages.
//
// On a node with more ranks than processing units the tight polls are
// skipped: every idle poll yields, since the spinning waiter would hold the
// processor that the rank it waits for needs in order to answer.
//
// Usage, in any loop that waits (MPI requests, shared-memory flags, ...):
//   WaitGuard guard(request, state, "shared_memory");
//   while (!ready()) guard.idle([&] { return WaitTarget{{peer}, "flag of rank 3"}; });
// The describe callback runs only when a report is due.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/flight_recorder.h"
#include "core/request.h"
#include "core/trace.h"
#include "core/wait_subject.h"

namespace collective::internal {

// What a loop waits for: the ranks, and a phrase for the messages
// ("a message of 64 B from rank 1 (ring all-gather step 2)").
struct WaitTarget {
  std::vector<int> ranks;
  std::string what;
};

class WaitGuard {
 public:
  // For a collective call: its label, deadline and timeout; `who` names the
  // algorithm or phase ("ring", "cross-rank check").
  WaitGuard(const Request& request, const WaitSubject& state, const char* who);
  // For waits outside a collective (communicator creation); `state` may be
  // null (no abort flag, no liveness table yet).
  WaitGuard(const char* operation, int rank, std::chrono::milliseconds timeout,
            const WaitSubject* state, const char* who);

  // Starts a new wait: the first polls spin without yielding.
  void begin_wait() {
    if (trace_wait_start_ns_ != 0) end_traced_wait();
    polls_ = 0;
  }
  ~WaitGuard() {
    if (trace_wait_start_ns_ != 0) end_traced_wait();
  }
  WaitGuard(const WaitGuard&) = delete;
  WaitGuard& operator=(const WaitGuard&) = delete;
  // How long a wait yields before it sleeps (idle with a `sleep`).
  void set_sleep_after(Clock::duration duration) { sleep_after_ = duration; }
  // Whether this guard was made for `request` (loops that keep one guard
  // across calls make a new one for each call).
  bool guards(const Request& request) const {
    return request_ == &request && deadline_ == request.deadline;
  }

  // Called after every poll that found nothing ready.
  template <typename Describe>
  void idle(Describe&& describe) {
    if (++polls_ <= tight_polls_) return;
    if (!armed_) arm();
    if (polls_ == tight_polls_ + 1 && trace_enabled()) trace_wait_start_ns_ = trace_now_ns();
    sched_yield();
    check(describe, Clock::now());
  }

  // As idle(), for a wait that can sleep until what it polls changes:
  // `sleep(limit)` blocks until then or for at most `limit`, and takes the
  // place of the yield once the wait has yielded for sleep_after.
  template <typename Describe, typename Sleep>
  void idle(Describe&& describe, Sleep&& sleep) {
    if (++polls_ <= tight_polls_) return;
    if (!armed_) arm();
    // After a yield the clock is cheap by comparison (vDSO, tens of ns),
    // and an oversubscribed yield can take a whole time slice.
    Clock::time_point now = Clock::now();
    if (polls_ == tight_polls_ + 1) {
      yielding_since_ = now;
      if (trace_enabled()) trace_wait_start_ns_ = trace_now_ns();
    }
    if (now - yielding_since_ < sleep_after_) {
      sched_yield();
    } else {
      sleep(kSleepSlice);
      now = Clock::now();
    }
    check(describe, now);
  }

 private:
  // A non-owning reference to the caller's describe callback.
  struct Describer {
    const void* callable;
    WaitTarget (*call)(const void*);
    WaitTarget operator()() const { return call(callable); }
  };
  template <typename F>
  static WaitTarget call_describe(const void* callable) {
    return (*static_cast<const F*>(callable))();
  }

  // Polls that spin before the first yield: MPI_Test drives progress, and a
  // few tight polls keep latency low when the peer is already running.
  static constexpr int kTightPolls = 64;
  // The longest sleep between two looks at the abort flag and the clock:
  // short next to any timeout, long next to a system call.
  static constexpr std::chrono::microseconds kSleepSlice{1000};
  // How often a wait lets MPI progress, from the call's start on: the
  // transfers it may owe a peer finish within this, and a short wait (a
  // small shared-memory call, whose ranks yield to each other when they
  // outnumber the cores) pays nothing for it.
  static constexpr std::chrono::microseconds kProgressInterval{50};

  template <typename Describe>
  void check(Describe& describe, Clock::time_point now) {
    if (trace_wait_start_ns_ != 0) trace_wait_last_ = now;
    if (now >= next_progress_) {
      next_progress_ = now + kProgressInterval;
      drive_mpi_progress();
    }
    if (abort_flag_ != nullptr && abort_flag_->load(std::memory_order_relaxed)) fail_abort();
    if (dump_generation_seen_ != nullptr &&
        dump_generation_seen_->load(std::memory_order_relaxed) != dump_request_generation()) {
      answer_dump_request(Describer(&describe, &call_describe<std::remove_reference_t<Describe>>));
    }
    if (now >= next_check_) {
      checkpoint(Describer(&describe, &call_describe<std::remove_reference_t<Describe>>));
    }
  }

  // Lets MPI move this rank's own messages while it waits on something
  // else (a shared-memory flag): a peer may be waiting for a transfer that
  // this rank's MPI completes only when this rank enters MPI again (Open
  // MPI's single-copy rendezvous finishes a send with a message the sender
  // must still send), and a wait that never enters MPI would hang both.
  void drive_mpi_progress() const;
  // What only a wait that outlasts the tight polls needs (the stall, liveness
  // and progress times, the dump flag), computed then: most waits of small
  // calls end within the tight polls, and the guard is made on every call.
  void arm();
  void checkpoint(const Describer& describe);
  // The trace's slice of a wait that yielded (core/trace.h).
  void end_traced_wait();
  // SIGUSR1 asked for a dump: notes in the flight recorder what this call
  // waits for (the watcher thread writes the file).
  void answer_dump_request(const Describer& describe);
  void note_wait(const WaitTarget& target) const;
  [[noreturn]] void fail_abort() const;
  [[noreturn]] void fail_timeout(const WaitTarget& target) const;
  [[noreturn]] void fail_dead_peers(const std::vector<int>& ranks, const WaitTarget& target) const;
  void warn_stall(const WaitTarget& target, Clock::time_point now) const;
  std::string label() const;
  std::string ranks_text(const std::vector<int>& ranks) const;

  const Request* request_ = nullptr;
  const char* operation_ = nullptr;
  const WaitSubject* state_ = nullptr;
  const std::atomic<bool>* abort_flag_ = nullptr;
  std::atomic<std::uint32_t>* dump_generation_seen_ = nullptr;
  int rank_;
  const char* who_;
  std::chrono::milliseconds timeout_;
  Clock::time_point start_;
  Clock::time_point deadline_;
  Clock::time_point warn_at_;
  Clock::time_point next_liveness_check_;
  std::chrono::milliseconds liveness_interval_{0};  // COLLECTIVE_PEER_CHECK_INTERVAL
  Clock::time_point next_check_;                    // earliest of the three above
  Clock::time_point next_progress_;
  bool armed_ = false;
  bool warned_ = false;
  int polls_ = 0;
  int tight_polls_ = kTightPolls;  // 0 on an oversubscribed node
  Clock::duration sleep_after_ = std::chrono::milliseconds(1);
  Clock::time_point yielding_since_;
  // The wait being traced: its first yield (0: none) and its last idle
  // turn, where it ends within one yield or sleep slice.
  std::int64_t trace_wait_start_ns_ = 0;
  Clock::time_point trace_wait_last_{};
};

}  // namespace collective::internal
