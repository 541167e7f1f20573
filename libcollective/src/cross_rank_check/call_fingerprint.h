// A compact description of one collective call, which every rank sends to
// every other before the call runs (cross_rank_check.h): ranks that
// disagree all fail with one clear error instead of hanging or returning
// different results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "collective/algorithm.h"
#include "core/request.h"

namespace collective::internal {

// Fixed layout: exchanged as bytes between ranks of one build. The header
// (everything before `rejection`) is 40 bytes with no padding: it rides in a
// 64-byte cache line beside a small carried input, and node boxes reserve
// exactly that much (kCallHeaderBytes), so the caller's 64-bit tag was made
// room for by narrowing fields whose values are small.
struct CallFingerprint {
  enum Status : std::uint8_t {
    kValid = 0,
    kRejectedInvalid,      // the rank raised InvalidArgumentError locally
    kRejectedUnsupported,  // the rank raised UnsupportedError locally
  };

  std::uint64_t sequence = 0;
  // 0 for barrier; recv_counts' hash or this rank's term of the pair sum
  // for the v-forms (vector_counts_check.h).
  std::uint64_t count = 0;
  std::uint64_t call_tag = 0;  // CommonOptions::call_tag (0: none)
  std::int32_t rank = -1;
  std::int32_t root = -1;  // -1: the collective has no root
  std::int8_t kind = 0;
  std::int8_t type = -1;      // -1 for barrier
  std::int8_t op = -1;        // -1: the collective has no op
  std::int8_t algorithm = 0;  // the one selected: the protocol depends on it
  std::int8_t requested = 0;  // what the caller (or COLLECTIVE_ALGORITHM) asked
  // Two 4-bit fields fill one byte (no padding bits to compare).
  std::uint8_t status : 4 = kValid;
  std::uint8_t deterministic : 4 = 0;  // 1: reduced in rank order (the protocol differs)
  // Not part of the call: in the direct exchange, the bytes of the second
  // message that follows this one to each rank it carried data to (0: none;
  // direct_check_exchange.h; at most 32 KiB). Receivers read it to drain
  // what they did not expect.
  std::uint16_t follow_up_bytes = 0;
  char rejection[216] = {};  // a rejecting rank's cause, truncated

  bool rejected() const { return status != kValid; }
};
static_assert(sizeof(CallFingerprint) == 256, "exchanged as 256 bytes");
static_assert(offsetof(CallFingerprint, rejection) == 40, "a 40-byte header");

// What a valid fingerprint puts on the wire: everything but the rejection
// text, which only a rejecting rank sends. Small messages cost by the byte
// across hosts (a carried 1 KiB input crossed the 1500-byte frame with a
// 256-byte fingerprint, not with this header).
inline constexpr std::size_t kFingerprintHeaderBytes = offsetof(CallFingerprint, rejection);

inline std::size_t wire_bytes(const CallFingerprint& print) {
  return print.rejected() ? sizeof(CallFingerprint) : kFingerprintHeaderBytes;
}

// The fingerprint of a valid request that will run `selected`.
CallFingerprint fingerprint_of(const Request& request, Algorithm selected, int rank);

// The fingerprint of a request this rank rejected with `cause`.
CallFingerprint rejected_fingerprint(const Request& request, int rank, bool unsupported,
                                     const std::string& cause);

// The outcome of comparing every rank's fingerprint.
struct Verdict {
  // kCountsDisagree: the calls agree but for the v-forms' counts
  // (vector_counts_check.h), which an exchange on the error path names.
  enum Kind { kAgree, kRejected, kMismatch, kCountsDisagree };
  Kind kind = kAgree;
  bool unsupported = false;  // kRejected: every rejection was UnsupportedError
  // Why, naming ranks and their values: "rank 0 count=4 op=sum, rank 1
  // count=8 op=max".
  std::string cause;
};

// `all[r]` is rank r's fingerprint.
Verdict judge(std::span<const CallFingerprint> all);

// Whether the count fields of `all`, for a v-form whose counts pair a
// sender with a receiver, sum to zero: every pair agrees (true for the
// other collectives).
bool pair_counts_balance(std::span<const CallFingerprint> all);

// Whether `theirs`, received from rank `from`, is a valid fingerprint of the
// call `mine` describes (what judge() would find agreeing with it), for a
// verdict on some of the ranks before the others have answered.
bool agrees_with(const CallFingerprint& theirs, int from, const CallFingerprint& mine);

}  // namespace collective::internal
