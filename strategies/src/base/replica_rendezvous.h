// Where the local replica threads of one run() meet for a collective.
//
// Each replica calls sync() with a signature describing the call ("all_reduce
// sum float32[3]") and a pointer to its own payload. The last replica to
// arrive checks that every signature matches, runs the combine function over
// all payloads outside the lock (that is where the local reduction and the
// cross-worker collective happen, on exactly one thread), and releases the
// others. Payloads stay valid because their owners are blocked in sync()
// until combine returns, even when the rendezvous is aborted meanwhile.
//
// Nothing hangs: a replica waiting for the others to arrive gives up after
// the timeout with a TimeoutError naming the missing replicas; a replica that
// returns or fails while others wait releases them with an error at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "collective/errors.h"

namespace collective::distribute::detail {

// Raised in a replica when another replica's failure or a broken rendezvous
// ends the collective it waits in. run() prefers the original error.
class ReplicaAbortedError : public CommunicationError {
 public:
  using CommunicationError::CommunicationError;
};

class ReplicaRendezvous {
 public:
  using Combine = std::function<void(std::span<void* const> payloads)>;

  // operation_prefix names the strategy in error messages
  // ("MirroredStrategy #2"); worker is the rank shown in errors.
  ReplicaRendezvous(int num_replicas, std::chrono::milliseconds timeout,
                    std::string operation_prefix, int worker);

  // Blocks until every local replica has called sync for this collective;
  // rethrows in every replica an error raised by the checks or by combine.
  void sync(int replica, const std::string& signature, void* payload, const Combine& combine);

  // The replica function of `replica` has returned (failed: by an exception).
  void replica_finished(int replica, bool failed);

  // Ends every wait of this rendezvous, now and later, with `error` (the
  // strategy is being destroyed).
  void abort(std::exception_ptr error);

  // Collectives completed so far (the number of the next one).
  std::uint64_t completed() const;

 private:
  std::string label(std::uint64_t generation) const;
  std::string missing_replicas() const;
  void break_locked(std::exception_ptr error);

  const int num_replicas_;
  const std::chrono::milliseconds timeout_;
  const std::string operation_prefix_;
  const int worker_;

  mutable std::mutex mutex_;
  std::condition_variable released_;
  std::uint64_t generation_ = 0;  // completed collectives
  int arrived_ = 0;
  std::vector<std::uint64_t> arrived_for_;  // per replica: generation + 1 once arrived
  std::vector<std::string> signatures_;
  std::vector<void*> payloads_;
  std::exception_ptr result_error_;  // of the collective that completed last
  std::vector<bool> finished_;
  std::vector<bool> failed_;
  std::exception_ptr broken_;  // set once: every later sync fails with it
};

}  // namespace collective::distribute::detail
