#include "validation/cross_rank_check.h"

#include <algorithm>
#include <type_traits>

#include "collective/errors.h"
#include "transport/mpi/peer_exchange.h"
#include "validation/node_board_check.h"

namespace collective::internal {
namespace {

// Up to this many ranks every rank sends its fingerprint straight to every
// other: one round trip, and a stalled call names exactly the ranks whose
// fingerprints are missing. Beyond it, p-1 messages per rank per call cost
// more than the ceil(log2 p) rounds of a dissemination all-gather.
constexpr int kDirectExchangeMaxRanks = 16;

void exchange_direct(const CallFingerprint& mine, PeerExchange& exchange, CallFingerprint* all,
                     int rank, int size) {
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    exchange.recv(&all[peer], sizeof(CallFingerprint), peer,
                  "cross-rank check: that rank's fingerprint of this call");
  }
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    exchange.send(&mine, sizeof(CallFingerprint), peer,
                  "cross-rank check: this rank's fingerprint of this call");
  }
  exchange.wait_all();
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

}  // namespace

std::span<const CallFingerprint> exchange_fingerprints(const CallFingerprint& mine,
                                                       const Request& request,
                                                       CommunicatorState& state) {
  // Reused across calls: no allocation on the hot path. Room for the
  // dissemination's relay area too.
  const auto size = static_cast<std::size_t>(state.size);
  static_assert(std::is_trivially_copyable_v<CallFingerprint>);
  auto* all = reinterpret_cast<CallFingerprint*>(
      state.scratch_check.get(2 * size * sizeof(CallFingerprint)));
  all[state.rank] = mine;
  PeerExchange exchange(request, state, "cross-rank check");
  if (state.size <= kDirectExchangeMaxRanks) {
    exchange_direct(mine, exchange, all, state.rank, state.size);
  } else {
    exchange_dissemination(mine, exchange, all, all + size, state.rank, state.size);
  }
  return {all, size};
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
