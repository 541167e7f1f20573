// The direct exchange of the cross-rank check (cross_rank_check.h): every
// rank sends its fingerprint to every other over MPI and receives every
// other rank's into a slot with room for carried data, so that ranks that
// carry data with their fingerprint and ranks that do not still match
// message for message. One object is one call's exchange; its sends may be
// spread over the call (two_stage_check.h sends one of them late).
//
// The sends may go before the receives are posted: a fingerprint is the
// first message of the call between any two ranks, so it matches the slot
// whenever that is posted, and posting the receives while the message is in
// flight keeps them off the call's critical path (a small all_reduce is
// one message each way).
//
// Carried data beyond kCarriedInOneMessageBytes goes to every peer in a
// second message sent at once (the follow-up), into the rest of the slot.
// A rank that sends follow-ups expects one from every peer and posts their
// receives with its slots; whatever each peer's header then says settles
// the rest before any verdict: an expected follow-up that was not sent is
// cancelled, one that was sent but not expected is received and dropped.
// So every message of the exchange is matched within the call, whatever
// the ranks' calls were.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/communicator_state.h"
#include "core/request.h"
#include "transport/mpi/peer_exchange.h"
#include "cross_rank_check/call_fingerprint.h"
#include "cross_rank_check/carried_data.h"

namespace collective::internal {

// Whether a slot with room for carried data travels as one MPI message
// (COLLECTIVE_MAX_MESSAGE_BYTES at least a slot; the same on every rank).
bool check_slots_fit_one_message();

class DirectCheckExchange {
 public:
  // `mine` must outlive the exchange. Nothing is posted yet.
  DirectCheckExchange(const CallFingerprint& mine, const Request& request,
                      CommunicatorState& state);

  // Posts the receive of every other rank's fingerprint (once; the waits
  // post them if nothing did). It must come before the call posts any other
  // receive, so that each rank's first message lands in its slot.
  void post_receives();

  // Sends this rank's fingerprint to `peer`, followed by `bytes` of `data`
  // (at most kCarriedInputBytes; the same data for every peer of a call).
  // Above kCarriedInOneMessageBytes the data must go to every peer, and all
  // sends must come before post_receives (the follow-ups are expected then).
  void send(int peer, const void* data = nullptr, std::size_t bytes = 0);
  // Waits for `peer`'s fingerprint; then received(peer) holds it.
  void wait_for(int peer);
  const CallFingerprint& received(int peer) const { return all_[peer]; }
  // Waits for every send and receive, follow-ups settled as above.
  void wait_all();

  // After wait_all: raises as check_across_ranks does unless every
  // fingerprint agrees (returns on the rank that rejected its own call).
  // The common case reads the headers where they landed, with no copy into
  // the table; a rank that disagrees is judged from all().
  void raise_unless_all_agree();
  // After wait_all: every rank's fingerprint, this rank's at its own index
  // (valid until the next call on the communicator).
  std::span<const CallFingerprint> all();
  // What `peer` carried after its fingerprint (meaningful once it agreed).
  const void* carried_by(int peer) const;
  // Where every rank's carried data is, indexed by rank, `own` at this
  // rank's index (valid until the next call on the communicator).
  std::span<const void* const> landed(const void* own);

 private:
  void take_fingerprint(int peer);
  // Whether every other rank's header agrees with this rank's (agrees_with).
  bool every_peer_agrees() const;
  // Whether the headers' count fields balance (pair_counts_balance).
  bool pair_counts_balance() const;
  // `peer`'s header as it landed in its slot (the rejection text empty).
  CallFingerprint header_of(int peer) const;
  std::byte* slot(int peer) const { return slots_ + static_cast<std::size_t>(peer) * kSlotBytes; }
  // Where a follow-up from `peer` lands: right after what its first message carried.
  std::byte* follow_up_area(int peer) const;
  // Cancels the expected follow-ups not sent, receives (and drops) the
  // ones sent but not expected; every slot has arrived.
  void settle_follow_ups();

  // One slot: a fingerprint (its header only, unless rejected), then the
  // carried data of both messages.
  static constexpr std::size_t kSlotBytes = sizeof(CallFingerprint) + kCarriedInputBytes;

  const CallFingerprint& mine_;
  const Request& request_;
  CommunicatorState& state_;
  PeerExchange exchange_;
  CallFingerprint* all_;
  std::byte* slots_;
  std::byte* carrying_;  // mine_ with carried data, built at the first such send
  const void** landed_;
  bool carrying_built_ = false;
  bool receives_posted_ = false;
  std::uint16_t follow_up_bytes_ = 0;       // what this rank sends each peer after its fingerprint
  PeerExchange::Handle first_receive_ = 0;  // the slots' receives follow it in rank order
  PeerExchange::Handle first_follow_up_ = 0;  // then, with follow_up_bytes_, the follow-ups
};

}  // namespace collective::internal
