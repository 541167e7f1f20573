// The progress engine of one communicator: a thread that runs the
// communicator's `_async` calls, one after another in program order,
// through the same path as the blocking calls (run_collective), so that
// they complete while the caller computes (docs/architecture.md, "Calls in
// flight"). Made on the first `_async` call; destroyed (after finishing
// every queued call) first when the communicator is released.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "api/plan_call.h"
#include "api/plan_start_watch.h"
#include "api/work_state.h"
#include "collective/options.h"
#include "core/communicator_state.h"
#include "core/request.h"

namespace collective::internal {

// One call waiting for its turn: the request (its sequence number already
// taken in program order) with its own copies of the v-forms' spans.
struct QueuedCall {
  Request request;
  CommonOptions options;
  std::vector<std::size_t> send_counts;
  std::vector<std::size_t> send_displacements;
  std::vector<std::size_t> recv_counts;
  std::vector<std::size_t> recv_displacements;
  std::shared_ptr<WorkState> work;
  // Set for a send_async / recv_async (api/point_to_point.cc): run instead
  // of the request, which then only labels it.
  std::function<void()> run_instead;
  // Set for a persistent plan's start (api/plan.cc): its prepared call
  // runs with the request's sequence number; the rest of the request only
  // shows the start in the flight record.
  std::shared_ptr<PlanCall> plan;
  // Whether enqueue() wakes the progress thread. A plan's start that does
  // not is run by the wait() that follows it, or woken for by the plans'
  // watch (api/plan_start_watch.h) once it was first in the queue at one
  // of the watch's looks (`seen_by_watch`) and still is at the next.
  bool wake_engine = true;
  bool seen_by_watch = false;
  // When a start that did not wake the thread was queued (set only then):
  // a wait() that comes much later shows that the program computes in
  // between.
  std::chrono::steady_clock::time_point queued_at{};
};

// The longest a plan's start may wait for its wait() and still count as
// waited for at once: about what waking the progress thread costs here.
inline constexpr std::chrono::microseconds kWaitedAtOnce{20};

class ProgressEngine : public AlgorithmResources, public PlanStartSource {
 public:
  explicit ProgressEngine(CommunicatorState& state);
  // Finishes every queued call (each bounded by its timeout), then joins.
  ~ProgressEngine() override;
  ProgressEngine(const ProgressEngine&) = delete;
  ProgressEngine& operator=(const ProgressEngine&) = delete;

  void enqueue(std::unique_ptr<QueuedCall> call);
  // Returns once no call is queued or running, running queued calls on
  // the calling thread while the engine's thread is not running one.
  void drain();
  // Work::wait(): runs queued calls on the calling thread, in order, while
  // the engine's thread is not running one, until `work` has finished.
  // Saves the two thread hand-offs of a call that is waited for at once.
  void help(WorkState& work);
  // Whether a call is queued or running (acquire: what the finished calls
  // wrote to the communicator's state is visible after false).
  bool busy() const { return outstanding_.load(std::memory_order_acquire) != 0; }

  // A plan of this communicator made / gone: while any lives, the plans'
  // watch looks at this engine (api/plan_start_watch.h).
  void add_plan();
  void remove_plan();
  void take_stale_plan_start() override;
  // The way back to this engine that it clears when it goes (a plan that
  // outlives its communicator's release must not reach it).
  const std::shared_ptr<EngineAccess>& access() const { return access_; }

 private:
  void run();
  // Takes the first queued call and runs it on this thread (lock held on
  // entry and on return; released while the call runs); the engine's own
  // thread or a helper's.
  void run_front(std::unique_lock<std::mutex>& lock, bool on_engine_thread);
  // Whether the engine's thread must be woken for `call`: it was queued to
  // wake it, or no plan keeps the plans' watch looking.
  bool wakes_thread(const QueuedCall& call) const;
  // The same for the first queued call, if any.
  bool front_needs_wake() const;
  // Whether this thread is inside a call or its completion callback (a
  // wait() there must not help: it would take the engine's lock again).
  static bool inside_call();

  CommunicatorState& state_;
  std::mutex mutex_;
  // Two conditions, so that finishing a call wakes only those waiting for
  // one to finish, and queueing one only the engine's thread.
  std::condition_variable call_queued_;    // or stopping, or the watch's wake
  std::condition_variable call_finished_;  // drain() and help() wait here
  std::deque<std::unique_ptr<QueuedCall>> queue_;
  std::atomic<std::size_t> outstanding_{0};  // queued + running
  bool running_ = false;                     // a call runs, on the engine's thread or a helper's
  bool stopping_ = false;
  std::size_t plans_ = 0;  // live plans of the communicator (add_plan)
  std::shared_ptr<EngineAccess> access_;
  std::thread thread_;
};

// The communicator's engine, made (and its thread started) on first use.
ProgressEngine& progress_engine_of(CommunicatorState& state);

// Program order for every other use of the communicator: returns once no
// `_async` call is queued or running on it. One load when none ever was.
inline void finish_work_in_flight(CommunicatorState& state) {
  if (auto* engine = static_cast<ProgressEngine*>(state.progress_engine.get());
      engine != nullptr && engine->busy()) {
    engine->drain();
  }
}

// Every communicator's calls in flight in this process, for
// Environment's destructor and MPI_Finalize.
void finish_all_work_in_flight();

}  // namespace collective::internal
