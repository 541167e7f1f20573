// What a wait loop reads of the communicator it waits on (core/wait_guard.h):
// the MPI communicator to let progress, the rank, the abort flag and its
// reason, who every peer is (to tell a dead peer from a slow one), whether
// the node is oversubscribed, and the flight recorder that notes the wait.
// CommunicatorState is a WaitSubject; WaitGuard knows only this part, so the
// state can itself wait (the exchange of process identities when it is made)
// without the guard depending on the whole state.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/peer_liveness.h"

namespace collective::internal {

class FlightRecorder;

struct WaitSubject {
  WaitSubject() = default;
  WaitSubject(MPI_Comm comm_value, int rank_value) : comm(comm_value), rank(rank_value) {}
  WaitSubject(const WaitSubject&) = delete;
  WaitSubject& operator=(const WaitSubject&) = delete;

  // Communicator::abort: safe from any thread, at any time; the first reason
  // is kept. The call in progress (if any) fails with CommunicationError at
  // its next poll, and the communicator is poisoned.
  void request_abort(const std::string& reason);
  bool abort_requested() const { return abort_flag.load(std::memory_order_acquire); }
  std::string abort_reason() const;

  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;

  // The rank each rank of this communicator has in the one the user called,
  // for a communicator that runs a step of another's call (hierarchical's
  // cross-node ring): errors and logs name the user's ranks. Empty: the same.
  std::vector<int> shown_ranks;
  int shown(int of_rank) const {
    return of_rank >= 0 && static_cast<std::size_t>(of_rank) < shown_ranks.size()
               ? shown_ranks[static_cast<std::size_t>(of_rank)]
               : of_rank;
  }

  // The communicator whose call this one runs a step of (hierarchical's and
  // NCCL's communicators across nodes), or null. Its abort and the death of
  // any of its ranks end this one's waits too: a death elsewhere in it makes
  // this step's peers give the call up, and a wait here for one of them
  // would otherwise last until the timeout.
  const WaitSubject* step_of = nullptr;
  const WaitSubject& called() const { return step_of != nullptr ? *step_of : *this; }

  // Set by request_abort from any thread; read by every wait loop.
  std::atomic<bool> abort_flag{false};

  // Process of every rank, to tell a dead peer from a slow one.
  PeerLiveness liveness;

  // Whether this rank's node has more ranks than processing units (set with
  // the topology): its waits yield from the first idle poll (wait_guard.h),
  // since a spinning waiter holds the processor the awaited rank needs.
  bool node_oversubscribed = false;

  // The last calls (core/flight_recorder.h); null when the recorder is off
  // and on internal states that run no call of their own.
  std::shared_ptr<FlightRecorder> flight_recorder;

 private:
  mutable std::mutex abort_mutex_;
  std::string abort_reason_;
};

}  // namespace collective::internal
