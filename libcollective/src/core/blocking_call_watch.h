// Bounds a blocking MPI collective that a dead rank would hold forever.
//
// The mpi algorithm at MPI_THREAD_MULTIPLE calls MPI's blocking collective,
// which returns only when MPI does; under `mpirun --enable-recovery` Open
// MPI 4.1 never returns from one whose rank died, and no exception can reach
// the thread inside it. So a watcher thread looks at the blocking calls in
// progress every COLLECTIVE_PEER_CHECK_INTERVAL: once one has lasted that
// long and a rank of its communicator on this host is gone, it logs which
// rank died during which call, records the failure, and ends the process
// with kExitAfterCommunicationFailure, as a failed shutdown does
// (docs/errors.md, "When a rank dies"). Calls on communicators with no
// rank on this host to judge are not watched.
#pragma once

#include <string>

#include "core/request.h"
#include "core/wait_subject.h"

namespace collective::internal {

class BlockingCallWatch {
 public:
  // `call` names MPI's function ("MPI_Allreduce"); a string literal.
  BlockingCallWatch(const Request& request, const WaitSubject& state, const char* call);
  // For a blocking MPI call outside a collective (Communicator::shrink's
  // MPI_Comm_create_group); `operation` is a string literal.
  BlockingCallWatch(const char* operation, const WaitSubject& state, const char* call);
  ~BlockingCallWatch();
  BlockingCallWatch(const BlockingCallWatch&) = delete;
  BlockingCallWatch& operator=(const BlockingCallWatch&) = delete;

  // What the watcher thread reads, under the registry's lock.
  std::string label() const { return request_ != nullptr ? request_->label() : operation_; }
  const WaitSubject& state() const { return *state_; }
  const char* call() const { return call_; }
  Clock::time_point start() const { return start_; }

 private:
  void start_watching();
  const Request* request_ = nullptr;
  const char* operation_ = nullptr;
  const WaitSubject* state_;
  const char* call_;
  Clock::time_point start_;
  bool watched_ = false;
};

}  // namespace collective::internal
