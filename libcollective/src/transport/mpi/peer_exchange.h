// Point-to-point messages of one collective call over the communicator's
// private MPI communicator, with waits that honour the call's deadline.
//
// Every wait polls (MPI_Test) under a WaitGuard: it yields the processor
// between polls, so ranks oversubscribed on few cores still progress,
// stops when the communicator is aborted, warns when stalled, fails fast
// when a rank on this host died, and gives up with a TimeoutError naming
// the peers and what the messages were for when the deadline passes.
// Transfers above COLLECTIVE_MAX_MESSAGE_BYTES are split into several MPI
// messages, since MPI counts are int.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

#include "core/communicator_state.h"
#include "core/request.h"
#include "core/wait_guard.h"
#include "util/small_vector.h"

namespace collective::internal {

class PeerExchange {
 public:
  using Handle = std::size_t;

  // Tags cycle with the call's sequence number (see peer_exchange.cc).
  static int tag_for(std::uint64_t sequence);

  PeerExchange(const Request& request, CommunicatorState& state, const char* algorithm_name);
  // The tags of Communicator::send and recv, which no collective's tag_for
  // gives: one per kind of message (the sender's record, the receiver's
  // verdict, the data), so that the messages of calls in flight at once
  // between two ranks, in either direction, never match another kind's
  // receive (api/point_to_point.cc). An exchange made with a tag uses
  // buffers of its caller's only: a request it abandons on failure leaves
  // the communicator's scratch alone, which another thread may be using.
  static constexpr int kPointToPointRecordTag = 32764;
  static constexpr int kPointToPointVerdictTag = 32765;
  static constexpr int kPointToPointDataTag = 32766;
  PeerExchange(const Request& request, CommunicatorState& state, const char* algorithm_name,
               int tag);
  ~PeerExchange();
  PeerExchange(const PeerExchange&) = delete;
  PeerExchange& operator=(const PeerExchange&) = delete;

  // `purpose` appears in a timeout message ("ring reduce-scatter step 2").
  // It must be a string that lives as long as the exchange (a literal).
  Handle send(const void* buffer, std::size_t bytes, int peer, const char* purpose, int step = -1);
  Handle recv(void* buffer, std::size_t bytes, int peer, const char* purpose, int step = -1);

  void wait(Handle handle);
  // Waits for every transfer posted so far, in whatever order they
  // complete; a stall or timeout names every peer still outstanding.
  void wait_all();
  // The same for the transfers [first, last) only.
  void wait_range(Handle first, Handle last);
  // Withdraws a posted receive that no message will match (MPI_Cancel);
  // one that a message already matched completes instead.
  void cancel(Handle handle);
  // Completed already (non-blocking check)?
  bool test(Handle handle);

  int rank() const { return state_.rank; }
  int size() const { return state_.size; }

 private:
  struct Pending {
    MPI_Request first = MPI_REQUEST_NULL;
    // A transfer that was split: its other pieces, split_parts_[rest_begin, rest_end).
    std::size_t rest_begin = 0;
    std::size_t rest_end = 0;
    int peer = -1;
    bool is_send = false;
    std::size_t bytes = 0;
    const char* purpose = "";
    int step = -1;
    bool done = false;
  };
  // Transfers a call keeps without allocating (a small all_reduce posts two
  // to four; the ring's segments go past it).
  static constexpr std::size_t kInlineTransfers = 8;

  Pending& at(Handle handle);
  Handle post(void* buffer, std::size_t bytes, int peer, bool is_send, const char* purpose,
              int step);
  bool poll(Pending& pending);
  WaitTarget describe(const Pending& pending) const;
  WaitTarget describe_open(std::size_t first, std::size_t last) const;
  void cancel_outstanding() noexcept;

  const Request& request_;
  CommunicatorState& state_;
  const char* algorithm_name_;
  int tag_;
  // A collective's exchange (by sequence number), whose buffers may be the
  // communicator's scratch; not send/recv's (made with a tag).
  bool uses_state_scratch_ = true;
  WaitGuard guard_;
  SmallVector<Pending, kInlineTransfers> pending_;
  std::vector<MPI_Request> split_parts_;
  std::size_t first_open_ = 0;  // pending_[i] for i < first_open_ are all done
};

}  // namespace collective::internal
