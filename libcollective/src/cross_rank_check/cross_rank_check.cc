#include "cross_rank_check/cross_rank_check.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "collective/errors.h"
#include "transport/mpi/peer_exchange.h"
#include "cross_rank_check/direct_check_exchange.h"
#include "cross_rank_check/node_board_check.h"

namespace collective::internal {
namespace {

// Up to kDirectExchangeMaxRanks every rank sends its fingerprint straight
// to every other (direct_check_exchange.h): one round trip, and a stalled
// call names exactly the ranks whose fingerprints are missing. Beyond it,
// p-1 messages per rank per call cost more than the ceil(log2 p) rounds of
// a dissemination all-gather.

// Sends this rank's fingerprint to every other rank, with `carried` for its
// recipients, and waits for every rank's.
void exchange_direct(DirectCheckExchange& exchange, const CarriedData& carried,
                     const CommunicatorState& state) {
  if (carried.bytes > kCarriedInOneMessageBytes && carried.to != CarriedData::kEveryPeer) {
    // A receiver expects a follow-up from every peer or from none.
    throw std::logic_error("cross-rank check: data past one message must go to every peer");
  }
  for (int peer = 0; peer < state.size; ++peer) {
    if (peer == state.rank) continue;
    const bool carries = carried.to == CarriedData::kEveryPeer || carried.to == peer;
    exchange.send(peer, carries ? carried.data : nullptr, carries ? carried.bytes : 0);
  }
  exchange.wait_all();  // posts the receives first, while the sends are in flight
}

// Bruck's dissemination all-gather: after the round with distance d, this
// rank holds the fingerprints of ranks rank .. rank+2d-1 (mod size).
// `held` has room for `size` fingerprints.
void exchange_dissemination(const CallFingerprint& mine, PeerExchange& exchange,
                            CallFingerprint* all, CallFingerprint* held, int rank, int size) {
  held[0] = mine;  // held[i] comes from rank (rank + i) % size
  for (int distance = 1, round = 0; distance < size; distance *= 2, ++round) {
    const int blocks = std::min(distance, size - distance);
    const std::size_t bytes = static_cast<std::size_t>(blocks) * sizeof(CallFingerprint);
    exchange.recv(&held[distance], bytes, (rank + distance) % size,
                  "cross-rank check: fingerprints relayed by that rank", round);
    exchange.send(held, bytes, (rank - distance + size) % size,
                  "cross-rank check: fingerprints to relay", round);
    exchange.wait_all();
  }
  for (int i = 0; i < size; ++i) all[(rank + i) % size] = held[i];
}

// Exchanges every rank's fingerprint and raises unless they agree.
void exchange_and_judge(const CallFingerprint& mine, const Request& request,
                        CommunicatorState& state) {
  if (state.size <= kDirectExchangeMaxRanks) {
    DirectCheckExchange exchange(mine, request, state);
    exchange_direct(exchange, CarriedData{}, state);
    exchange.raise_unless_all_agree();
    return;
  }
  // Reused across calls: every rank's fingerprint, then the relay area.
  const auto size = static_cast<std::size_t>(state.size);
  auto* all = reinterpret_cast<CallFingerprint*>(
      state.scratch_check.get(2 * size * sizeof(CallFingerprint)));
  PeerExchange exchange(request, state, "cross-rank check");
  exchange_dissemination(mine, exchange, all, all + size, state.rank, state.size);
  raise_unless_agreed({all, size}, mine, request, state);
}

}  // namespace

bool check_is_direct_exchange(CommunicatorState& state) {
  return state.size <= kDirectExchangeMaxRanks && node_board(state) == nullptr &&
         check_slots_fit_one_message();
}

std::span<const void* const> exchange_check_carrying(const CallFingerprint& mine,
                                                     const CarriedData& carried,
                                                     const Request& request,
                                                     CommunicatorState& state) {
  DirectCheckExchange exchange(mine, request, state);
  exchange_direct(exchange, carried, state);
  exchange.raise_unless_all_agree();
  // Agreed: every fingerprint was valid, so data follows its header.
  return exchange.landed(carried.data);
}

std::span<const void* const> carry_check(const CarriedData& carried, const Request& request,
                                         CommunicatorState& state) {
  if (request.check_relay != nullptr) return request.check_relay->carry(carried);
  return exchange_check_carrying(*request.carried_check, carried, request, state);
}

void check_across_ranks(const CallFingerprint& mine, const Request& request,
                        CommunicatorState& state) {
  if (NodeSegment* board = node_board(state)) {
    board->finish_round(check_on_node(*board, mine, request, state, {}));
    return;
  }
  exchange_and_judge(mine, request, state);
}

}  // namespace collective::internal
