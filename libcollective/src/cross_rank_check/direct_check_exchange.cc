#include "cross_rank_check/direct_check_exchange.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "collective/errors.h"
#include "core/env_params.h"
#include "cross_rank_check/check_verdict.h"
#include "cross_rank_check/vector_counts_check.h"

namespace collective::internal {
namespace {

static_assert(std::is_trivially_copyable_v<CallFingerprint>);
// A fingerprint's receive is never split (env_params.h).
static_assert(sizeof(CallFingerprint) <= kMinMessageBytes);

// A follow-up carries what one message could not.
constexpr std::size_t kFollowUpCapacity = kCarriedInputBytes - kCarriedInOneMessageBytes;
// The first message: a fingerprint (256 bytes when rejected, which carries
// nothing) or a header and at most kCarriedInOneMessageBytes. Its receive
// ends where a follow-up's begins, so the two never overlap.
constexpr std::size_t kFirstMessageCapacity = kFingerprintHeaderBytes + kCarriedInOneMessageBytes;
static_assert(kFirstMessageCapacity >= sizeof(CallFingerprint));
static_assert(kFollowUpCapacity <= UINT16_MAX, "CallFingerprint::follow_up_bytes is 16 bits");
static_assert(kFirstMessageCapacity + kFollowUpCapacity <=
              sizeof(CallFingerprint) + kCarriedInputBytes);

// The receives are posted together, in rank order, skipping this rank.
std::size_t receive_index(int peer, int rank) {
  return static_cast<std::size_t>(peer < rank ? peer : peer - 1);
}

}  // namespace

bool check_slots_fit_one_message() {
  return env_params().max_message_bytes >= sizeof(CallFingerprint) + kCarriedInputBytes;
}

DirectCheckExchange::DirectCheckExchange(const CallFingerprint& mine, const Request& request,
                                         CommunicatorState& state)
    : mine_(mine), request_(request), state_(state), exchange_(request, state, "cross-rank check") {
  // Reused across calls: no allocation on the hot path. Every rank's
  // fingerprint, the slots, this rank's carrying message, where each rank's
  // carried data landed.
  const auto size = static_cast<std::size_t>(state.size);
  const std::size_t fingerprints = size * sizeof(CallFingerprint);
  auto* base =
      state.scratch_check.get(fingerprints + (size + 1) * kSlotBytes + size * sizeof(const void*));
  all_ = reinterpret_cast<CallFingerprint*>(base);
  slots_ = base + fingerprints;
  carrying_ = slots_ + size * kSlotBytes;
  landed_ = reinterpret_cast<const void**>(carrying_ + kSlotBytes);
}

void DirectCheckExchange::post_receives() {
  if (receives_posted_) return;
  receives_posted_ = true;
  // Below COLLECTIVE_MAX_MESSAGE_BYTES a slot would be split into pieces a
  // shorter message never sends: then only fingerprints travel.
  const std::size_t capacity =
      check_slots_fit_one_message() ? kFirstMessageCapacity : sizeof(CallFingerprint);
  bool first = true;
  for (int peer = 0; peer < state_.size; ++peer) {
    if (peer == state_.rank) continue;
    const PeerExchange::Handle posted = exchange_.recv(
        slot(peer), capacity, peer, "cross-rank check: that rank's fingerprint of this call");
    if (first) first_receive_ = posted;  // handles are consecutive
    first = false;
  }
  if (follow_up_bytes_ == 0) return;
  // Every peer sends one if its call is this one; settle_follow_ups() sorts
  // out the peers whose call is not.
  first = true;
  for (int peer = 0; peer < state_.size; ++peer) {
    if (peer == state_.rank) continue;
    const PeerExchange::Handle posted =
        exchange_.recv(follow_up_area(peer), kFollowUpCapacity, peer,
                       "cross-rank check: the rest of that rank's first data");
    if (first) first_follow_up_ = posted;
    first = false;
  }
}

std::byte* DirectCheckExchange::follow_up_area(int peer) const {
  return slot(peer) + kFirstMessageCapacity;
}

void DirectCheckExchange::send(int peer, const void* data, std::size_t bytes) {
  const std::size_t header = wire_bytes(mine_);
  if (bytes == 0) {
    exchange_.send(&mine_, header, peer, "cross-rank check: this rank's fingerprint of this call");
    return;
  }
  if (bytes > kCarriedInputBytes || (bytes > kCarriedInOneMessageBytes && receives_posted_) ||
      mine_.rejected()) {
    throw std::logic_error("cross-rank check: carried data over its limit, too late, or rejected");
  }
  const std::size_t first = std::min(bytes, kCarriedInOneMessageBytes);
  if (!carrying_built_) {
    std::memcpy(carrying_, &mine_, header);
    std::memcpy(carrying_ + header, data, first);
    follow_up_bytes_ = static_cast<std::uint16_t>(bytes - first);
    std::memcpy(carrying_ + offsetof(CallFingerprint, follow_up_bytes), &follow_up_bytes_,
                sizeof(follow_up_bytes_));
    carrying_built_ = true;
  }
  exchange_.send(carrying_, header + first, peer,
                 "cross-rank check: this rank's fingerprint of this call, with its first data");
  if (follow_up_bytes_ > 0) {
    exchange_.send(static_cast<const std::byte*>(data) + first, follow_up_bytes_, peer,
                   "cross-rank check: the rest of this rank's first data");
  }
}

void DirectCheckExchange::take_fingerprint(int peer) {
  CallFingerprint& print = all_[peer];
  // A valid fingerprint travels as its header: the rejection text stays empty.
  std::memcpy(static_cast<void*>(&print), slot(peer), kFingerprintHeaderBytes);
  if (print.rejected()) {
    std::memcpy(static_cast<void*>(&print), slot(peer), sizeof(CallFingerprint));
  } else {
    print.rejection[0] = '\0';
  }
}

CallFingerprint DirectCheckExchange::header_of(int peer) const {
  CallFingerprint header;
  std::memcpy(static_cast<void*>(&header), slot(peer), kFingerprintHeaderBytes);
  return header;
}

void DirectCheckExchange::wait_for(int peer) {
  post_receives();
  exchange_.wait(first_receive_ + receive_index(peer, state_.rank));
  take_fingerprint(peer);
}

void DirectCheckExchange::wait_all() {
  post_receives();
  const auto peers = static_cast<PeerExchange::Handle>(state_.size - 1);
  if (follow_up_bytes_ > 0) {
    // An expected follow-up may never come: the slots first.
    exchange_.wait_range(first_receive_, first_receive_ + peers);
  } else {
    exchange_.wait_all();
  }
  settle_follow_ups();
  exchange_.wait_all();
}

void DirectCheckExchange::settle_follow_ups() {
  for (int peer = 0; peer < state_.size; ++peer) {
    if (peer == state_.rank) continue;
    const CallFingerprint header = header_of(peer);
    // A rejecting rank carries nothing.
    const std::uint32_t sent = header.rejected() ? 0 : header.follow_up_bytes;
    if (sent > kFollowUpCapacity) {
      throw CommunicationError(request_.label(), state_.rank,
                               "cross-rank check: rank " + std::to_string(peer) +
                                   " announced a follow-up of " + std::to_string(sent) +
                                   " B, over the " + std::to_string(kFollowUpCapacity) +
                                   " B limit (a library of another build?)");
    }
    const bool expected = follow_up_bytes_ > 0;
    if (expected && sent == 0) {
      exchange_.cancel(first_follow_up_ + receive_index(peer, state_.rank));
    } else if (!expected && sent > 0) {
      // Its call differs from this one (the verdict says how): the message
      // is received here so that it cannot match a later call.
      exchange_.recv(follow_up_area(peer), sent, peer,
                     "cross-rank check: a follow-up this rank's call did not expect");
    }
  }
}

bool DirectCheckExchange::every_peer_agrees() const {
  for (int peer = 0; peer < state_.size; ++peer) {
    if (peer != state_.rank && !agrees_with(header_of(peer), peer, mine_)) return false;
  }
  return true;
}

bool DirectCheckExchange::pair_counts_balance() const {
  if (!has_pair_counts(static_cast<CollectiveKind>(mine_.kind))) return true;
  std::uint64_t sum = mine_.count;  // wraps: only whether it is zero matters
  for (int peer = 0; peer < state_.size; ++peer) {
    if (peer != state_.rank) sum += header_of(peer).count;
  }
  return sum == 0;
}

void DirectCheckExchange::raise_unless_all_agree() {
  if (!every_peer_agrees() || !pair_counts_balance()) {
    raise_unless_agreed(all(), mine_, request_, state_);
  }
}

std::span<const CallFingerprint> DirectCheckExchange::all() {
  all_[state_.rank] = mine_;
  for (int peer = 0; peer < state_.size; ++peer) {
    if (peer != state_.rank) take_fingerprint(peer);
  }
  return {all_, static_cast<std::size_t>(state_.size)};
}

const void* DirectCheckExchange::carried_by(int peer) const {
  return slot(peer) + kFingerprintHeaderBytes;
}

std::span<const void* const> DirectCheckExchange::landed(const void* own) {
  for (int peer = 0; peer < state_.size; ++peer) {
    landed_[peer] = peer == state_.rank ? own : carried_by(peer);
  }
  return {landed_, static_cast<std::size_t>(state_.size)};
}

}  // namespace collective::internal
