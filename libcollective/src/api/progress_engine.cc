#include "api/progress_engine.h"

#include <pthread.h>

#include <exception>
#include <set>
#include <utility>

#include "api/dispatch.h"
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
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
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
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(call));
    outstanding_.fetch_add(1, std::memory_order_relaxed);
  }
  changed_.notify_all();
}

void ProgressEngine::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (outstanding_.load(std::memory_order_relaxed) != 0) {
    if (!running_ && !queue_.empty() && !inside_call()) {
      run_front(lock);
    } else {
      changed_.wait(lock);
    }
  }
}

void ProgressEngine::help(WorkState& work) {
  if (inside_call()) return;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!work.finished()) {
    if (!running_ && !queue_.empty()) {
      run_front(lock);
    } else {
      changed_.wait(lock);
    }
  }
}

void ProgressEngine::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    // Stopping only once the queue is empty: every call started by the
    // program runs, in order, as on the other ranks.
    changed_.wait(lock,
                  [&] { return (!running_ && !queue_.empty()) || (stopping_ && queue_.empty()); });
    if (queue_.empty()) return;
    run_front(lock);
  }
}

void ProgressEngine::run_front(std::unique_lock<std::mutex>& lock) {
  std::unique_ptr<QueuedCall> call = std::move(queue_.front());
  queue_.pop_front();
  running_ = true;
  lock.unlock();
  t_inside_call = true;
  std::exception_ptr error;
  try {
    if (call->run_instead) {
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
  changed_.notify_all();
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
