// What a collective::Work points to: whether its call finished, and how.
// Shared by the handle (the caller's thread) and the progress thread that
// runs the call; written once, by the progress thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>

namespace collective::internal {

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

 private:
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
