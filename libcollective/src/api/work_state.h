// What a collective::Work points to: whether its call finished, and how.
// Shared by the handle (the caller's thread) and the progress thread that
// runs the call; written once, by the progress thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace collective::internal {

class WorkState;

// The way from a Work back to the engine that runs its call, so that wait()
// can run the calls queued ahead of it itself (ProgressEngine::help). The
// engine clears it when it goes; a helper holds `mutex` meanwhile, so the
// engine waits for it.
struct EngineAccess {
  std::mutex mutex;
  void (*help)(void* engine, WorkState& work) = nullptr;
  void* engine = nullptr;
};

class WorkState {
 public:
  explicit WorkState(std::string operation) : operation_(std::move(operation)) {}
  ~WorkState();
  WorkState(const WorkState&) = delete;
  WorkState& operator=(const WorkState&) = delete;

  // The progress thread: the call returned (error == nullptr) or threw.
  void finish(std::exception_ptr error);

  // Blocks until finished; rethrows the call's error.
  void wait();
  // At most `timeout`; false when still in flight.
  bool wait_for(std::chrono::milliseconds timeout);
  bool finished() const;
  // Rethrows the call's error when it finished with one.
  void rethrow_if_failed();

  // A handle looked at the outcome (wait or test): a failure is then the
  // caller's, not a lost one.
  void mark_observed();
  bool observed() const;

  // Runs `callback` after finish() (at once when finished already).
  void on_completion(std::function<void()> callback);

  const std::string& operation() const { return operation_; }

  // Set when the call is queued (ProgressEngine::enqueue).
  void set_engine_access(std::shared_ptr<EngineAccess> access) {
    engine_access_ = std::move(access);
  }

 private:
  // wait(): runs the calls queued ahead of this one, and this one, on the
  // waiting thread when the engine is not running one.
  void help_engine();

  std::shared_ptr<EngineAccess> engine_access_;
  const std::string operation_;
  mutable std::mutex mutex_;
  std::condition_variable finished_changed_;
  bool finished_ = false;
  bool settled_ = false;  // finished and the completion callback ran: wait() returns
  bool observed_ = false;
  std::exception_ptr error_;
  std::function<void()> completion_callback_;
};

}  // namespace collective::internal
