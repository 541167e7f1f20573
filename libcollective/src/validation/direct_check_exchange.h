// The direct exchange of the cross-rank check (cross_rank_check.h): every
// rank sends its fingerprint to every other over MPI and receives every
// other rank's into a slot with room for carried data, so that ranks that
// carry data with their fingerprint and ranks that do not still match
// message for message. One object is one call's exchange; its sends may be
// spread over the call (two_stage_check.h sends one of them late).
#pragma once

#include <cstddef>
#include <span>

#include "core/communicator_state.h"
#include "core/request.h"
#include "transport/mpi/peer_exchange.h"
#include "validation/call_fingerprint.h"

namespace collective::internal {

// Whether a slot with room for carried data travels as one MPI message
// (COLLECTIVE_MAX_MESSAGE_BYTES at least a slot; the same on every rank).
bool check_slots_fit_one_message();

class DirectCheckExchange {
 public:
  // Posts the receive of every other rank's fingerprint. `mine` must
  // outlive the exchange.
  DirectCheckExchange(const CallFingerprint& mine, const Request& request,
                      CommunicatorState& state);

  // Sends this rank's fingerprint to `peer`, followed by `bytes` of `data`
  // (at most kCarriedInputBytes; the same data for every peer of a call).
  void send(int peer, const void* data = nullptr, std::size_t bytes = 0);
  // Waits for `peer`'s fingerprint; then all()[peer] holds it.
  void wait_for(int peer);
  // Waits for every send and receive; then all() holds every fingerprint.
  void wait_all();

  // Every rank's fingerprint, this rank's at its own index (valid until the
  // next call on the communicator).
  std::span<const CallFingerprint> all() const;
  // What `peer` carried after its fingerprint (meaningful once it agreed).
  const void* carried_by(int peer) const;

 private:
  void take_fingerprint(int peer);

  const CallFingerprint& mine_;
  CommunicatorState& state_;
  PeerExchange exchange_;
  CallFingerprint* all_;
  std::byte* slots_;
  std::byte* carrying_;  // mine_ with carried data, built at the first such send
  bool carrying_built_ = false;
};

}  // namespace collective::internal
