#include "base/run_gate.h"

#include "collective/errors.h"

namespace collective::distribute::detail {

void RunGate::enter(const std::string& operation, int rank) {
  if (running_.exchange(true)) {
    throw InvalidArgumentError(operation, rank,
                               "run() is already in progress on another thread; a strategy runs "
                               "one step at a time");
  }
  if (closing_.load()) {
    leave();
    throw InvalidArgumentError(operation, rank,
                               "the strategy is being destroyed; run() cannot start");
  }
}

void RunGate::attach(ReplicaRendezvous* rendezvous) {
  rendezvous_.store(rendezvous);
  if (!closing_.load()) return;
  // close() may be using the previous pointer, or may have missed this one.
  std::lock_guard<std::mutex> lock(mutex_);
  if (rendezvous != nullptr) rendezvous->abort(closing_error_);
}

void RunGate::leave() {
  running_.store(false);
  if (!closing_.load()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  finished_.notify_all();
}

void RunGate::close(const std::string& operation, int rank, const std::string& reason,
                    Communicator* communicator) {
  std::unique_lock<std::mutex> lock(mutex_);
  closing_error_ = std::make_exception_ptr(CommunicationError(operation, rank, reason));
  closing_.store(true);
  if (!running_.load()) return;
  // A replica function may be computing, in a rendezvous, or in a
  // cross-worker call: the last two end at once; the first ends when it
  // returns or reaches its next collective.
  if (ReplicaRendezvous* rendezvous = rendezvous_.load()) rendezvous->abort(closing_error_);
  if (communicator != nullptr) communicator->abort(reason);
  finished_.wait(lock, [this] { return !running_.load(); });
}

}  // namespace collective::distribute::detail
