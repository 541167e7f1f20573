#include "validation/cross_rank_check.h"

#include <algorithm>
#include <cstring>
#include <vector>
#include <type_traits>

#include "collective/errors.h"
#include "core/env_params.h"
#include "transport/mpi/peer_exchange.h"
#include "validation/node_board_check.h"

namespace collective::internal {
namespace {

// Up to kDirectExchangeMaxRanks every rank sends its fingerprint straight
// to every other: one round trip, and a stalled call names exactly the ranks
// whose fingerprints are missing. Beyond it, p-1 messages per rank per call
// cost more than the ceil(log2 p) rounds of a dissemination all-gather.

// One message of the direct exchange: a fingerprint (its header only,
// unless rejected), then any carried data.
constexpr std::size_t kSlotBytes = sizeof(CallFingerprint) + kCarriedInputBytes;

// Whether a whole slot travels as one MPI message. A transfer above
// COLLECTIVE_MAX_MESSAGE_BYTES is split into pieces of that size, and a
// receive posted for a slot could then wait for pieces a shorter message
// never sends: below it, the check receives exactly a fingerprint and
// nothing is carried (the limit is the same on every rank: agreed_params).
bool slots_fit_one_message() { return env_params().max_message_bytes >= kSlotBytes; }

// The scratch of one check: every rank's fingerprint, the relay area of the
// dissemination (or the direct exchange's slots), and this rank's
// fingerprint with carried data.
struct CheckScratch {
  CallFingerprint* all;
  std::byte* slots;
  std::byte* carrying;
};

CheckScratch check_scratch(CommunicatorState& state) {
  const auto size = static_cast<std::size_t>(state.size);
  const std::size_t fingerprints = size * sizeof(CallFingerprint);
  const std::size_t relay = std::max(fingerprints, size * kSlotBytes);
  auto* base = state.scratch_check.get(fingerprints + relay + kSlotBytes);
  return {reinterpret_cast<CallFingerprint*>(base), base + fingerprints,
          base + fingerprints + relay};
}

std::byte* slot_of(const CheckScratch& scratch, int rank) {
  return scratch.slots + static_cast<std::size_t>(rank) * kSlotBytes;
}

// Sends this rank's fingerprint `mine` to every other rank, with
// `carried` appended for its recipients, and receives every other rank's
// into its slot; copies each fingerprint to scratch.all[r].
void exchange_direct(const CallFingerprint& mine, const CarriedData& carried,
                     const Request& request, CommunicatorState& state,
                     const CheckScratch& scratch) {
  const int rank = state.rank;
  const int size = state.size;
  const std::size_t header = wire_bytes(mine);
  if (carried.to != CarriedData::kNoPeer) {
    std::memcpy(scratch.carrying, &mine, header);
    if (carried.bytes > 0) std::memcpy(scratch.carrying + header, carried.data, carried.bytes);
  }
  auto carries_to = [&](int peer) {
    return carried.to == CarriedData::kEveryPeer || carried.to == peer;
  };
  PeerExchange exchange(request, state, "cross-rank check");
  const std::size_t capacity = slots_fit_one_message() ? kSlotBytes : sizeof(CallFingerprint);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    exchange.recv(slot_of(scratch, peer), capacity, peer,
                  "cross-rank check: that rank's fingerprint of this call");
  }
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    if (carries_to(peer)) {
      exchange.send(scratch.carrying, header + carried.bytes, peer,
                    "cross-rank check: this rank's fingerprint of this call, with its first data");
    } else {
      exchange.send(&mine, header, peer, "cross-rank check: this rank's fingerprint of this call");
    }
  }
  exchange.wait_all();
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    const std::byte* slot = slot_of(scratch, peer);
    CallFingerprint& print = scratch.all[peer];
    print = CallFingerprint{};
    std::memcpy(static_cast<void*>(&print), slot, kFingerprintHeaderBytes);
    if (print.rejected()) std::memcpy(static_cast<void*>(&print), slot, sizeof(CallFingerprint));
  }
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

// Every rank's fingerprint, indexed by rank, in state.scratch_check (valid
// until the next call).
std::span<const CallFingerprint> exchange_fingerprints(const CallFingerprint& mine,
                                                       const Request& request,
                                                       CommunicatorState& state) {
  // Reused across calls: no allocation on the hot path.
  const auto size = static_cast<std::size_t>(state.size);
  static_assert(std::is_trivially_copyable_v<CallFingerprint>);
  const CheckScratch scratch = check_scratch(state);
  scratch.all[state.rank] = mine;
  if (state.size <= kDirectExchangeMaxRanks) {
    exchange_direct(mine, CarriedData{}, request, state, scratch);
  } else {
    PeerExchange exchange(request, state, "cross-rank check");
    exchange_dissemination(mine, exchange, scratch.all,
                           reinterpret_cast<CallFingerprint*>(scratch.slots), state.rank,
                           state.size);
  }
  return {scratch.all, size};
}

}  // namespace

bool check_is_direct_exchange(CommunicatorState& state) {
  return state.size <= kDirectExchangeMaxRanks && node_board(state) == nullptr &&
         slots_fit_one_message();
}

std::span<const void* const> exchange_check_carrying(const CallFingerprint& mine,
                                                     const CarriedData& carried,
                                                     const Request& request,
                                                     CommunicatorState& state) {
  const auto size = static_cast<std::size_t>(state.size);
  const CheckScratch scratch = check_scratch(state);
  scratch.all[state.rank] = mine;
  exchange_direct(mine, carried, request, state, scratch);
  raise_unless_agreed({scratch.all, size}, mine, request, state);
  // Agreed: every fingerprint was valid, so data follows its header.
  thread_local std::vector<const void*> landed;
  landed.resize(size);
  for (std::size_t r = 0; r < size; ++r) {
    landed[r] = static_cast<int>(r) == state.rank
                    ? carried.data
                    : slot_of(scratch, static_cast<int>(r)) + kFingerprintHeaderBytes;
  }
  return {landed.data(), size};
}

void check_across_ranks(const CallFingerprint& mine, const Request& request,
                        CommunicatorState& state) {
  if (NodeSegment* board = node_board(state)) {
    board->finish_round(check_on_node(*board, mine, request, state, {}));
    return;
  }
  raise_unless_agreed(exchange_fingerprints(mine, request, state), mine, request, state);
}

void raise_unless_agreed(std::span<const CallFingerprint> all, const CallFingerprint& mine,
                         const Request& request, const CommunicatorState& state) {
  // A rank number that is not the sender's would mean a message from some
  // other exchange matched: refuse rather than judge garbage.
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].rank != static_cast<int>(r) || all[r].sequence != request.sequence) {
      throw CommunicationError(request.label(), state.rank,
                               "cross-rank check: the fingerprint from rank " + std::to_string(r) +
                                   " is for rank " + std::to_string(all[r].rank) + " call #" +
                                   std::to_string(all[r].sequence) +
                                   " (messages of different calls crossed)");
    }
  }
  const Verdict verdict = judge(all);
  switch (verdict.kind) {
    case Verdict::kAgree:
      return;
    case Verdict::kRejected:
      if (mine.rejected()) return;  // the caller raises this rank's own error
      if (verdict.unsupported) throw UnsupportedError(request.label(), state.rank, verdict.cause);
      throw InvalidArgumentError(request.label(), state.rank, verdict.cause);
    case Verdict::kMismatch:
      throw MismatchError(request.label(), state.rank, verdict.cause);
  }
}

}  // namespace collective::internal
