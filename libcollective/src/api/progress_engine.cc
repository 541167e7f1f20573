#include "api/progress_engine.h"

#include <pthread.h>

#include <exception>
#include <set>
#include <utility>

#include "api/dispatch.h"
#include "api/plan_start_watch.h"
#include "core/flight_recorder.h"
#include "core/mpi_lifetime.h"

// Defined by the MPI drop-in (libcollective_mpi.so) when it is loaded: marks
// the progress thread as inside the drop-in, so that the library's own
// MPI_* calls made there go straight to PMPI_, as on the caller's thread.
extern "C" __attribute__((weak, visibility("default"))) void collective_progress_thread_started();

namespace collective::internal {
namespace {

// Every engine of the process, so that the end of MPI waits for them.
// Never destroyed: a Communicator held in a static may outlive main.
std::mutex& engines_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}
std::set<ProgressEngine*>& engines() {
  static auto* all = new std::set<ProgressEngine*>;
  return *all;
}

thread_local bool t_inside_call = false;

}  // namespace

bool ProgressEngine::inside_call() { return t_inside_call; }

ProgressEngine::ProgressEngine(CommunicatorState& state)
    : state_(state), access_(std::make_shared<EngineAccess>()) {
  access_->engine = this;
  access_->help = [](void* engine, WorkState& work) {
    static_cast<ProgressEngine*>(engine)->help(work);
  };
  {
    const std::lock_guard<std::mutex> lock(engines_mutex());
    engines().insert(this);
  }
  // A program that calls MPI_Finalize itself (no Environment) still has
  // its calls in flight finished first.
  before_mpi_finalize(&finish_all_work_in_flight);
  thread_ = std::thread([this] {
    if (&collective_progress_thread_started != nullptr) collective_progress_thread_started();
    run();
  });
  pthread_setname_np(thread_.native_handle(), "collective-work");
}

ProgressEngine::~ProgressEngine() {
  {
    const std::lock_guard<std::mutex> lock(engines_mutex());
    engines().erase(this);
  }
  std::size_t plans_left = 0;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    plans_left = plans_;
  }
  plan_watch_forget(*this, plans_left);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  call_queued_.notify_all();
  thread_.join();
  // A waiter still running a call on its own thread finishes first.
  const std::lock_guard<std::mutex> helping(access_->mutex);
  access_->engine = nullptr;
}

void ProgressEngine::enqueue(std::unique_ptr<QueuedCall> call) {
  call->work->set_engine_access(access_);
  // In program order, on the caller's thread: the flight record shows the
  // call queued from now on (core/flight_recorder.h).
  // (Point-to-point calls are not in the recorder, blocking or not.)
  if (state_.flight_recorder && call->request.point_to_point == nullptr) {
    state_.flight_recorder->queue(call->request);
  }
  bool wake = false;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(call));
    outstanding_.fetch_add(1, std::memory_order_relaxed);
    wake = wakes_thread(*queue_.back());
  }
  if (wake) call_queued_.notify_all();
}

void ProgressEngine::add_plan() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++plans_;
  }
  plan_watch_add(*this);
}

void ProgressEngine::remove_plan() {
  bool wake = false;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (plans_ > 0) --plans_;
    wake = front_needs_wake();  // a start left queued is the thread's now
  }
  plan_watch_remove();
  if (wake) call_queued_.notify_all();
}

void ProgressEngine::take_stale_plan_start() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (running_ || queue_.empty() || queue_.front()->wake_engine) return;
    QueuedCall& front = *queue_.front();
    if (!front.seen_by_watch) {
      front.seen_by_watch = true;  // a whole interval before it is taken
      return;
    }
  }
  call_queued_.notify_all();
}

bool ProgressEngine::wakes_thread(const QueuedCall& call) const {
  return call.wake_engine || plans_ == 0;
}

bool ProgressEngine::front_needs_wake() const {
  return !queue_.empty() && wakes_thread(*queue_.front());
}

void ProgressEngine::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (outstanding_.load(std::memory_order_relaxed) != 0) {
    if (!running_ && !queue_.empty() && !inside_call()) {
      run_front(lock, false);
    } else {
      call_finished_.wait(lock);
    }
  }
}

void ProgressEngine::help(WorkState& work) {
  if (inside_call()) return;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!work.finished()) {
    if (!running_ && !queue_.empty()) {
      run_front(lock, false);
    } else {
      call_finished_.wait(lock);
    }
  }
}

void ProgressEngine::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  // Stopping only once the queue is empty: every call started by the
  // program runs, in order, as on the other ranks.
  const auto ready = [&] {
    return (!running_ && !queue_.empty()) || (stopping_ && queue_.empty());
  };
  while (true) {
    call_queued_.wait(lock, ready);
    if (queue_.empty()) return;
    run_front(lock, true);
  }
}

void ProgressEngine::run_front(std::unique_lock<std::mutex>& lock, bool on_engine_thread) {
  std::unique_ptr<QueuedCall> call = std::move(queue_.front());
  queue_.pop_front();
  running_ = true;
  lock.unlock();
  // What this start says of how the plan is used (api/plan_call.h): the
  // thread took it before any wait() came, or the wait() came late, or at
  // once.
  if (call->plan) {
    const bool computed_before_waiting =
        !call->wake_engine && std::chrono::steady_clock::now() - call->queued_at > kWaitedAtOnce;
    call->plan->wake_on_start.store(on_engine_thread || computed_before_waiting,
                                    std::memory_order_relaxed);
  }
  t_inside_call = true;
  std::exception_ptr error;
  try {
    if (call->plan) {
      run_prepared_call(state_, call->plan->prepared, call->request.sequence);
    } else if (call->run_instead) {
      call->run_instead();
    } else {
      run_numbered_collective(state_, call->request, call->options);
    }
  } catch (...) {
    error = std::current_exception();
  }
  // One step for both observers: whoever sees the Work finished sees the
  // engine idle (when this was the last call), and drain() returns only
  // after the Work is finished.
  lock.lock();
  running_ = false;
  outstanding_.fetch_sub(1, std::memory_order_release);
  call->work->finish(std::move(error));
  t_inside_call = false;
  call_finished_.notify_all();
  // The engine's thread is woken after every call that was queued to wake
  // it (as when one condition served both): without this wake an 8 B
  // all_reduce_async + wait took about twice as long (the thread's wake
  // then falls within the caller's next start). After a plan's start that
  // did not wake it, only when a call behind it needs the thread.
  if (call->wake_engine || front_needs_wake()) call_queued_.notify_all();
  lock.unlock();
  call.reset();
  lock.lock();
}

ProgressEngine& progress_engine_of(CommunicatorState& state) {
  if (!state.progress_engine) state.progress_engine = std::make_unique<ProgressEngine>(state);
  return static_cast<ProgressEngine&>(*state.progress_engine);
}

void finish_all_work_in_flight() {
  const std::lock_guard<std::mutex> lock(engines_mutex());
  for (ProgressEngine* engine : engines()) engine->drain();
}

}  // namespace collective::internal
