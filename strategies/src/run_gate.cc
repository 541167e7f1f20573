#include "run_gate.h"

#include "collective/errors.h"

namespace collective::distribute::detail {

void RunGate::enter(const std::string& operation, int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closing_) {
    throw InvalidArgumentError(operation, rank,
                               "the strategy is being destroyed; run() cannot start");
  }
  if (running_) {
    throw InvalidArgumentError(operation, rank,
                               "run() is already in progress on another thread; a strategy runs "
                               "one step at a time");
  }
  running_ = true;
}

void RunGate::attach(ReplicaRendezvous* rendezvous) {
  std::lock_guard<std::mutex> lock(mutex_);
  rendezvous_ = rendezvous;
}

void RunGate::leave() {
  std::lock_guard<std::mutex> lock(mutex_);
  running_ = false;
  rendezvous_ = nullptr;
  finished_.notify_all();
}

bool RunGate::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

void RunGate::close(const std::string& operation, int rank, const std::string& reason,
                    Communicator* communicator) {
  std::unique_lock<std::mutex> lock(mutex_);
  closing_ = true;
  if (!running_) return;
  // A replica function may be computing, in a rendezvous, or in a
  // cross-worker call: the last two end at once; the first ends when it
  // returns or reaches its next collective.
  if (rendezvous_ != nullptr) {
    rendezvous_->abort(std::make_exception_ptr(CommunicationError(operation, rank, reason)));
  }
  if (communicator != nullptr) communicator->abort(reason);
  finished_.wait(lock, [this] { return !running_; });
}

}  // namespace collective::distribute::detail
