#include "collective/work.h"

#include <algorithm>

#include "api/work_state.h"
#include "core/log.h"

namespace collective {
namespace internal {

WorkState::~WorkState() {
  // The destroyed-Work rule: a failure nobody waited for is not lost.
  if (error_ && !observed_) {
    try {
      std::rethrow_exception(error_);
    } catch (const std::exception& error) {
      COLLECTIVE_LOG(kWarn, "a call whose Work was destroyed unfinished failed: " << error.what());
    } catch (...) {
    }
  }
}

void WorkState::finish(std::exception_ptr error) {
  std::function<void()> callback;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::move(error);
    finished_ = true;  // test() inside the callback sees the outcome
    callback = std::move(completion_callback_);
  }
  // Before any wait() returns: a waiter may rely on what the callback did.
  if (callback) callback();
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    settled_ = true;
  }
  finished_changed_.notify_all();
}

void WorkState::on_completion(std::function<void()> callback) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!finished_) {
      completion_callback_ = std::move(callback);
      return;
    }
  }
  if (callback) callback();
}

void WorkState::help_engine() {
  const std::shared_ptr<EngineAccess> access = engine_access_;
  if (!access) return;
  // Another thread helping the same engine: wait as usual meanwhile.
  std::unique_lock<std::mutex> helping(access->mutex, std::try_to_lock);
  if (!helping.owns_lock() || access->engine == nullptr) return;
  access->help(access->engine, *this);
}

void WorkState::wait() {
  help_engine();
  std::unique_lock<std::mutex> lock(mutex_);
  finished_changed_.wait(lock, [&] { return settled_; });
  observed_ = true;
  if (error_) std::rethrow_exception(error_);
}

bool WorkState::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!finished_changed_.wait_for(lock, timeout, [&] { return settled_; })) return false;
  observed_ = true;
  if (error_) std::rethrow_exception(error_);
  return true;
}

bool WorkState::finished() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

void WorkState::rethrow_if_failed() {
  const std::lock_guard<std::mutex> lock(mutex_);
  observed_ = true;
  if (error_) std::rethrow_exception(error_);
}

void WorkState::mark_observed() {
  const std::lock_guard<std::mutex> lock(mutex_);
  observed_ = true;
}

bool WorkState::observed() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return observed_;
}

}  // namespace internal

Work::Work(std::shared_ptr<internal::WorkState> state) : state_(std::move(state)) {}

Work::~Work() = default;

void Work::wait() {
  if (state_) state_->wait();
}

bool Work::wait(std::chrono::milliseconds timeout) {
  if (!state_) return true;
  // A bound beyond a century is no bound (and would overflow the clock).
  if (timeout >= std::chrono::hours(24 * 365 * 100)) {
    state_->wait();
    return true;
  }
  return state_->wait_for(std::max(timeout, std::chrono::milliseconds{0}));
}

bool Work::test() {
  if (!state_) return true;
  if (!state_->finished()) return false;
  state_->rethrow_if_failed();
  return true;
}

void Work::on_completion(std::function<void()> callback) {
  if (!state_) {
    if (callback) callback();
    return;
  }
  state_->on_completion(std::move(callback));
}

bool Work::is_completed() const { return !state_ || state_->finished(); }

std::string Work::operation() const { return state_ ? state_->operation() : std::string(); }

}  // namespace collective
