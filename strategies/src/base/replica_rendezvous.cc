#include "base/replica_rendezvous.h"

#include <sstream>

namespace collective::distribute::detail {

ReplicaRendezvous::ReplicaRendezvous(int num_replicas, std::chrono::milliseconds timeout,
                                     std::string operation_prefix, int worker)
    : num_replicas_(num_replicas),
      timeout_(timeout),
      operation_prefix_(std::move(operation_prefix)),
      worker_(worker),
      arrived_for_(static_cast<std::size_t>(num_replicas), 0),
      signatures_(static_cast<std::size_t>(num_replicas)),
      payloads_(static_cast<std::size_t>(num_replicas), nullptr),
      finished_(static_cast<std::size_t>(num_replicas), false),
      failed_(static_cast<std::size_t>(num_replicas), false) {}

std::uint64_t ReplicaRendezvous::completed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return generation_;
}

std::string ReplicaRendezvous::label(std::uint64_t generation) const {
  return operation_prefix_ + " replica collective #" + std::to_string(generation);
}

std::string ReplicaRendezvous::missing_replicas() const {
  std::ostringstream out;
  bool first = true;
  for (int r = 0; r < num_replicas_; ++r) {
    if (arrived_for_[static_cast<std::size_t>(r)] != generation_ + 1) {
      out << (first ? "" : ", ") << r;
      first = false;
    }
  }
  return out.str();
}

void ReplicaRendezvous::abort(std::exception_ptr error) {
  std::lock_guard<std::mutex> lock(mutex_);
  break_locked(std::move(error));
}

void ReplicaRendezvous::break_locked(std::exception_ptr error) {
  if (!broken_) broken_ = std::move(error);
  released_.notify_all();
}

void ReplicaRendezvous::sync(int replica, const std::string& signature, void* payload,
                             const Combine& combine) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (broken_) std::rethrow_exception(broken_);
  const std::uint64_t generation = generation_;
  for (int r = 0; r < num_replicas_; ++r) {
    if (!finished_[static_cast<std::size_t>(r)]) continue;
    const std::string cause =
        failed_[static_cast<std::size_t>(r)]
            ? "local replica " + std::to_string(r) + " failed (see its error) before reaching " +
                  signature
            : "local replica " + std::to_string(r) +
                  " returned from the replica function "
                  "without calling " +
                  signature +
                  ": every replica must make the same collective calls in the same order";
    if (failed_[static_cast<std::size_t>(r)]) {
      break_locked(std::make_exception_ptr(ReplicaAbortedError(label(generation), worker_, cause)));
    } else {
      break_locked(std::make_exception_ptr(MismatchError(label(generation), worker_, cause)));
    }
    std::rethrow_exception(broken_);
  }
  const std::size_t self = static_cast<std::size_t>(replica);
  signatures_[self] = signature;
  payloads_[self] = payload;
  arrived_for_[self] = generation + 1;
  ++arrived_;

  if (arrived_ < num_replicas_) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (generation_ == generation) {
      if (arrived_ == num_replicas_) {
        // Everyone is here and the last replica is combining over this
        // replica's payload: leaving now, even on abort, would free it under
        // the combiner. Combine is bounded by libcollective's own timeouts
        // (and ended early by the abort that closes the communicator).
        released_.wait(lock);
        continue;
      }
      if (broken_) break;
      if (released_.wait_until(lock, deadline) == std::cv_status::timeout &&
          generation_ == generation && !broken_ && arrived_ < num_replicas_) {
        std::ostringstream cause;
        cause << "local replica " << replica << " waited "
              << std::chrono::duration<double>(timeout_).count() << " s in " << signature
              << " for local replicas " << missing_replicas() << " to make the same call";
        break_locked(
            std::make_exception_ptr(TimeoutError(label(generation), worker_, cause.str())));
      }
    }
    if (generation_ != generation) {
      if (result_error_) std::rethrow_exception(result_error_);
      return;
    }
    std::rethrow_exception(broken_);
  }

  // The last to arrive: check the calls match, then combine.
  std::exception_ptr error;
  for (int r = 1; r < num_replicas_; ++r) {
    if (signatures_[static_cast<std::size_t>(r)] != signatures_[0]) {
      std::ostringstream cause;
      cause << "local replicas made different collective calls: ";
      for (int q = 0; q < num_replicas_; ++q) {
        cause << (q ? "; " : "") << "replica " << q << ": "
              << signatures_[static_cast<std::size_t>(q)];
      }
      error = std::make_exception_ptr(MismatchError(label(generation), worker_, cause.str()));
      break;
    }
  }
  if (!error) {
    const std::vector<void*> payloads = payloads_;
    lock.unlock();
    try {
      combine(payloads);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
  }
  result_error_ = error;
  arrived_ = 0;
  ++generation_;
  released_.notify_all();
  if (error) std::rethrow_exception(error);
}

void ReplicaRendezvous::replica_finished(int replica, bool failed) {
  std::lock_guard<std::mutex> lock(mutex_);
  finished_[static_cast<std::size_t>(replica)] = true;
  failed_[static_cast<std::size_t>(replica)] = failed;
  if (arrived_ == 0 || arrived_ == num_replicas_ || broken_) return;
  // Replicas are waiting for a collective this replica will never join.
  std::string waiting;
  std::string what;
  for (int r = 0; r < num_replicas_; ++r) {
    if (arrived_for_[static_cast<std::size_t>(r)] == generation_ + 1) {
      waiting += (waiting.empty() ? "" : ", ") + std::to_string(r);
      if (what.empty()) what = signatures_[static_cast<std::size_t>(r)];
    }
  }
  if (failed) {
    break_locked(std::make_exception_ptr(ReplicaAbortedError(
        label(generation_), worker_,
        "local replica " + std::to_string(replica) +
            " failed (see its error) while local replicas " + waiting + " wait in " + what)));
  } else {
    break_locked(std::make_exception_ptr(MismatchError(
        label(generation_), worker_,
        "local replica " + std::to_string(replica) +
            " returned from the replica function while local replicas " + waiting + " wait in " +
            what + ": every replica must make the same collective calls in the same order")));
  }
}

}  // namespace collective::distribute::detail
