#include "validation/direct_check_exchange.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "core/env_params.h"
#include "validation/cross_rank_check.h"

namespace collective::internal {
namespace {

static_assert(std::is_trivially_copyable_v<CallFingerprint>);

// One message of the direct exchange: a fingerprint (its header only,
// unless rejected), then any carried data.
constexpr std::size_t kSlotBytes = sizeof(CallFingerprint) + kCarriedInputBytes;

// The receive of rank q's message is the exchange's q-th posting (q-1-th
// past this rank): receives are posted first, in rank order.
PeerExchange::Handle receive_of(int peer, int rank) {
  return static_cast<PeerExchange::Handle>(peer < rank ? peer : peer - 1);
}

}  // namespace

bool check_slots_fit_one_message() { return env_params().max_message_bytes >= kSlotBytes; }

DirectCheckExchange::DirectCheckExchange(const CallFingerprint& mine, const Request& request,
                                         CommunicatorState& state)
    : mine_(mine), state_(state), exchange_(request, state, "cross-rank check") {
  // Reused across calls: no allocation on the hot path. Every rank's
  // fingerprint, the slots, this rank's carrying message.
  const auto size = static_cast<std::size_t>(state.size);
  const std::size_t fingerprints = size * sizeof(CallFingerprint);
  auto* base = state.scratch_check.get(fingerprints + (size + 1) * kSlotBytes);
  all_ = reinterpret_cast<CallFingerprint*>(base);
  slots_ = base + fingerprints;
  carrying_ = slots_ + size * kSlotBytes;
  all_[state.rank] = mine;
  // Below COLLECTIVE_MAX_MESSAGE_BYTES a slot would be split into pieces a
  // shorter message never sends: then only fingerprints travel.
  const std::size_t capacity =
      check_slots_fit_one_message() ? kSlotBytes : sizeof(CallFingerprint);
  for (int peer = 0; peer < state.size; ++peer) {
    if (peer == state.rank) continue;
    const PeerExchange::Handle posted =
        exchange_.recv(slots_ + static_cast<std::size_t>(peer) * kSlotBytes, capacity, peer,
                       "cross-rank check: that rank's fingerprint of this call");
    if (posted != receive_of(peer, state.rank)) {
      throw std::logic_error("cross-rank check: receives must be the exchange's first postings");
    }
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
  print = CallFingerprint{};
  std::memcpy(static_cast<void*>(&print), slot, kFingerprintHeaderBytes);
  if (print.rejected()) std::memcpy(static_cast<void*>(&print), slot, sizeof(CallFingerprint));
}

void DirectCheckExchange::wait_for(int peer) {
  exchange_.wait(receive_of(peer, state_.rank));
  take_fingerprint(peer);
}

void DirectCheckExchange::wait_all() {
  exchange_.wait_all();
  for (int peer = 0; peer < state_.size; ++peer) {
    if (peer != state_.rank) take_fingerprint(peer);
  }
}

std::span<const CallFingerprint> DirectCheckExchange::all() const {
  return {all_, static_cast<std::size_t>(state_.size)};
}

const void* DirectCheckExchange::carried_by(int peer) const {
  return slots_ + static_cast<std::size_t>(peer) * kSlotBytes + kFingerprintHeaderBytes;
}

}  // namespace collective::internal
