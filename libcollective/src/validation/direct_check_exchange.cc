#include "validation/direct_check_exchange.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/env_params.h"
#include "validation/cross_rank_check.h"

namespace collective::internal {
namespace {

static_assert(std::is_trivially_copyable_v<CallFingerprint>);

// One message of the direct exchange: a fingerprint (its header only,
// unless rejected), then any carried data.
constexpr std::size_t kSlotBytes = sizeof(CallFingerprint) + kCarriedInputBytes;

// The receives are posted together, in rank order, skipping this rank.
std::size_t receive_index(int peer, int rank) {
  return static_cast<std::size_t>(peer < rank ? peer : peer - 1);
}

}  // namespace

bool check_slots_fit_one_message() { return env_params().max_message_bytes >= kSlotBytes; }

DirectCheckExchange::DirectCheckExchange(const CallFingerprint& mine, const Request& request,
                                         CommunicatorState& state)
    : mine_(mine), state_(state), exchange_(request, state, "cross-rank check") {
  // Reused across calls: no allocation on the hot path. Every rank's
  // fingerprint, the slots, this rank's carrying message, where each rank's
  // carried data landed.
  const auto size = static_cast<std::size_t>(state.size);
  const std::size_t fingerprints = size * sizeof(CallFingerprint);
  auto* base = state.scratch_check.get(fingerprints + (size + 1) * kSlotBytes +
                                       size * sizeof(const void*));
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
      check_slots_fit_one_message() ? kSlotBytes : sizeof(CallFingerprint);
  bool first = true;
  for (int peer = 0; peer < state_.size; ++peer) {
    if (peer == state_.rank) continue;
    const PeerExchange::Handle posted =
        exchange_.recv(slots_ + static_cast<std::size_t>(peer) * kSlotBytes, capacity, peer,
                       "cross-rank check: that rank's fingerprint of this call");
    if (first) first_receive_ = posted;  // handles are consecutive
    first = false;
  }
}

void DirectCheckExchange::send(int peer, const void* data, std::size_t bytes) {
  const std::size_t header = wire_bytes(mine_);
  if (bytes == 0) {
    exchange_.send(&mine_, header, peer, "cross-rank check: this rank's fingerprint of this call");
    return;
  }
  if (!carrying_built_) {
    std::memcpy(carrying_, &mine_, header);
    std::memcpy(carrying_ + header, data, bytes);
    carrying_built_ = true;
  }
  exchange_.send(carrying_, header + bytes, peer,
                 "cross-rank check: this rank's fingerprint of this call, with its first data");
}

void DirectCheckExchange::take_fingerprint(int peer) {
  const std::byte* slot = slots_ + static_cast<std::size_t>(peer) * kSlotBytes;
  CallFingerprint& print = all_[peer];
  // A valid fingerprint travels as its header: the rejection text stays empty.
  std::memcpy(static_cast<void*>(&print), slot, kFingerprintHeaderBytes);
  if (print.rejected()) {
    std::memcpy(static_cast<void*>(&print), slot, sizeof(CallFingerprint));
  } else {
    print.rejection[0] = '\0';
  }
}

void DirectCheckExchange::wait_for(int peer) {
  post_receives();
  exchange_.wait(first_receive_ + receive_index(peer, state_.rank));
  take_fingerprint(peer);
}

void DirectCheckExchange::wait_all() {
  post_receives();
  exchange_.wait_all();
}

bool DirectCheckExchange::every_peer_agrees() const {
  CallFingerprint theirs;
  for (int peer = 0; peer < state_.size; ++peer) {
    if (peer == state_.rank) continue;
    std::memcpy(static_cast<void*>(&theirs), slots_ + static_cast<std::size_t>(peer) * kSlotBytes,
                kFingerprintHeaderBytes);
    if (!agrees_with(theirs, peer, mine_)) return false;
  }
  return true;
}

std::span<const CallFingerprint> DirectCheckExchange::all() {
  all_[state_.rank] = mine_;
  for (int peer = 0; peer < state_.size; ++peer) {
    if (peer != state_.rank) take_fingerprint(peer);
  }
  return {all_, static_cast<std::size_t>(state_.size)};
}

const void* DirectCheckExchange::carried_by(int peer) const {
  return slots_ + static_cast<std::size_t>(peer) * kSlotBytes + kFingerprintHeaderBytes;
}

std::span<const void* const> DirectCheckExchange::landed(const void* own) {
  for (int peer = 0; peer < state_.size; ++peer) {
    landed_[peer] = peer == state_.rank ? own : carried_by(peer);
  }
  return {landed_, static_cast<std::size_t>(state_.size)};
}

}  // namespace collective::internal
