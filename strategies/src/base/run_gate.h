// Whether a run() of a strategy is in progress, so that destroying the
// strategy from another thread neither pulls its state from under the
// running replicas nor leaves them waiting: the destructor ends the run's
// waits (its local rendezvous and its cross-worker calls fail at once with
// an error saying the strategy is being destroyed) and returns once run()
// has returned. Shared by the strategy and its run, so it outlives either.
// A run's side takes no lock unless the strategy is being destroyed (every
// step passes here). Rule: docs/strategies.md, "Destroying a strategy while
// run() is in progress".
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>

#include "collective/communicator.h"
#include "base/replica_rendezvous.h"

namespace collective::distribute::detail {

class RunGate {
 public:
  // run() begins: InvalidArgumentError(operation) when another run() is in
  // progress or the strategy is being destroyed.
  void enter(const std::string& operation, int rank);
  // The run's rendezvous, broken by close(); nullptr before it is
  // destroyed.
  void attach(ReplicaRendezvous* rendezvous);
  void leave();

  // From the strategy's destructor: refuses new runs; a run in progress has
  // its rendezvous broken and `communicator` (the strategy's own, if any)
  // aborted with `reason`, and is waited for. Never call it from inside
  // that run (the destructor checks).
  void close(const std::string& operation, int rank, const std::string& reason,
             Communicator* communicator);
  bool running() const { return running_.load(); }

 private:
  // Every access below is sequentially consistent: a run's store of one
  // flag and load of the other, against close()'s, cannot both miss.
  std::atomic<bool> running_{false};
  std::atomic<bool> closing_{false};
  std::atomic<ReplicaRendezvous*> rendezvous_{nullptr};
  std::mutex mutex_;  // close() holds it while it uses rendezvous_ and waits
  std::condition_variable finished_;
  std::exception_ptr closing_error_;  // written before closing_ is set
};

}  // namespace collective::distribute::detail
