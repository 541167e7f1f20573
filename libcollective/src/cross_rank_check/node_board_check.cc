#include "cross_rank_check/node_board_check.h"

#include <cstddef>
#include <cstring>
#include <optional>
#include <sstream>
#include <vector>

#include "core/wait_guard.h"
#include "cross_rank_check/check_verdict.h"

namespace collective::internal {
namespace {

static_assert(offsetof(CallFingerprint, rejection) == kCallHeaderBytes,
              "the call header is the fingerprint up to its rejection text");
static_assert(sizeof(CallFingerprint) <= kBoxPayloadBytes);

// Whose boxes of `round` are still empty (communicator ranks).
WaitTarget missing_boxes(const NodeSegment& segment, std::uint64_t round) {
  WaitTarget target;
  for (int q = 0; q < segment.local_size(); ++q) {
    if (q != segment.local_rank() && !segment.inline_ready(q, round)) {
      target.ranks.push_back(segment.comm_rank(q));
    }
  }
  std::ostringstream what;
  what << (target.ranks.size() == 1 ? "its" : "their")
       << " fingerprint of this call in the node's shared segment (round " << round << ")";
  target.what = what.str();
  return target;
}

// Waits until every rank's box holds `round`.
void wait_for_boxes(NodeSegment& segment, std::uint64_t round, const Request& request,
                    const CommunicatorState& state) {
  const int ranks = segment.local_size();
  int next = 0;  // boxes before this one are known to be posted
  auto advance = [&] {
    while (next < ranks && (next == segment.local_rank() || segment.inline_ready(next, round))) {
      ++next;
    }
    return next == ranks;
  };
  if (advance()) return;
  std::optional<WaitGuard> guard;
  segment.wait_until(
      advance,
      [&]() -> WaitGuard& {
        guard.emplace(request, state, "cross-rank check");
        guard->set_sleep_after(segment.sleep_after());
        return *guard;
      },
      [&] { return missing_boxes(segment, round); });
}

// The usual case, decided without copying: every box holds this call's
// header but for the rank field, which holds the right rank.
bool all_alike(const NodeSegment& segment, std::uint64_t round, const CallFingerprint& mine) {
  if (mine.rejected()) return false;
  const auto* own = reinterpret_cast<const std::byte*>(&mine);
  constexpr std::size_t kRankAt = offsetof(CallFingerprint, rank);
  constexpr std::size_t kAfterRank = kRankAt + sizeof(CallFingerprint::rank);
  for (int q = 0; q < segment.local_size(); ++q) {
    if (q == segment.local_rank()) continue;
    const std::byte* header = segment.call_header(q, round);
    std::int32_t rank;
    std::memcpy(&rank, header + kRankAt, sizeof(rank));
    if (rank != segment.comm_rank(q) || std::memcmp(header, own, kRankAt) != 0 ||
        std::memcmp(header + kAfterRank, own + kAfterRank, kCallHeaderBytes - kAfterRank) != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace

NodeSegment* node_board(CommunicatorState& state) {
  if (!state.topology || state.topology->node_count() != 1) return nullptr;
  return existing_node_segment(state);
}

std::uint64_t check_on_node(NodeSegment& segment, const CallFingerprint& mine,
                            const Request& request, CommunicatorState& state,
                            std::span<const std::byte> payload) {
  const std::uint64_t round = segment.begin_round();
  segment.wait_slot_free(round, request);
  const int r = segment.local_rank();
  std::byte* box = segment.call_header(r, round);
  std::memcpy(box, &mine, mine.rejected() ? sizeof(CallFingerprint) : kCallHeaderBytes);
  if (!payload.empty()) std::memcpy(box + kCallHeaderBytes, payload.data(), payload.size());
  segment.publish_inline(round);
  try {
    wait_for_boxes(segment, round, request, state);
    if (all_alike(segment, round, mine)) return round;
    std::vector<CallFingerprint> all(static_cast<std::size_t>(segment.local_size()));
    for (int q = 0; q < segment.local_size(); ++q) {
      CallFingerprint& print = all[static_cast<std::size_t>(q)];
      const std::byte* header = segment.call_header(q, round);
      std::memcpy(static_cast<void*>(&print), header, kCallHeaderBytes);
      if (print.rejected())
        std::memcpy(static_cast<void*>(&print), header, sizeof(CallFingerprint));
    }
    raise_unless_agreed(all, mine, request, state);
  } catch (...) {
    // Through with the round on every path: later calls reuse its slots.
    segment.finish_round(round);
    throw;
  }
  return round;
}

}  // namespace collective::internal
