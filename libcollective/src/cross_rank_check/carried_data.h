// What rides with a fingerprint in the cross-rank check (cross_rank_check.h):
// the limits on an algorithm's data carried with it and where that data
// goes. Apart from the check itself so that the exchanges that carry it
// (direct_check_exchange.h) need only this.
#pragma once

#include <cstddef>

namespace collective::internal {

// The most data that rides with a fingerprint in the direct exchange.
// Every direct exchange receives into slots this much larger than a
// fingerprint, so a rank that carries and one that does not (or that
// carries for another algorithm) still match message for message, and learn
// from the check that their calls differ. 64 KiB: a posted receive larger
// than its message costs nothing, and the slots (p of them) are allocated
// once per communicator.
inline constexpr std::size_t kCarriedInputBytes = 64 * 1024;
// The most of it in the fingerprint's own message: beyond it, the rest
// follows at once in a second message (CallFingerprint::follow_up_bytes),
// before the verdict, into the rest of the receiver's slot. 32 KiB keeps
// each message within MPI's eager protocol (Open MPI's TCP transport: 64
// KiB with its header), where one message of 64 KiB would wait a
// rendezvous round trip. A receiver whose call differs drains the second
// message by what the header says, so nothing is left to match a later call.
inline constexpr std::size_t kCarriedInOneMessageBytes = 32 * 1024;

// How much of a large first message rides with the fingerprint (ring,
// recursive_doubling): the rest of that message waits for the verdict, so a
// larger head would only be copied into the check's message for nothing;
// 16 KiB covers the first message of calls bound by latency, where the
// round saved matters.
inline constexpr std::size_t kCarriedHeadBytes = 16 * 1024;

// The head of a first message of `first_message_bytes` that rides with the
// fingerprint: at most kCarriedHeadBytes, whole elements.
inline std::size_t carried_head_bytes(std::size_t first_message_bytes, std::size_t element_bytes) {
  const std::size_t limit = kCarriedHeadBytes / element_bytes * element_bytes;
  return first_message_bytes < limit ? first_message_bytes : limit;
}

// The data an algorithm's first message would send, riding instead with
// this rank's fingerprint: `bytes` (at most kCarriedInputBytes; above
// kCarriedInOneMessageBytes only to kEveryPeer) at `data`, to rank `to`,
// or to every other rank when `to` is kEveryPeer.
struct CarriedData {
  static constexpr int kNoPeer = -1;
  static constexpr int kEveryPeer = -2;
  const void* data = nullptr;
  std::size_t bytes = 0;
  int to = kNoPeer;
};

}  // namespace collective::internal
