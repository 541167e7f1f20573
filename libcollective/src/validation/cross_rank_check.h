// The check every collective makes before it runs (unless
// COLLECTIVE_VALIDATE=0): each rank contributes the fingerprint of its call
// (call_fingerprint.h) and receives every other rank's, then all ranks
// reach the same verdict from the same data.
//
// A rank that rejected its own arguments still takes part, with a
// "rejected" fingerprint, so the others learn at once which rank refused
// and why, instead of waiting for it until the timeout. A rank that has not
// reached the call is named by the stall warning and the timeout (the
// direct exchange knows exactly whose fingerprint is missing). After the
// check every rank knows all ranks are present and agree, which is what
// lets the mpi algorithm enter a blocking MPI collective safely.
//
// Cost: one round of (p-1) 256-byte messages each way, up to
// kDirectExchangeMaxRanks ranks; above that a dissemination all-gather of
// ceil(log2 p) rounds. Measured in docs/errors.md. A small all-reduce across
// nodes carries its input in the same messages (recursive_doubling), so that
// it pays no round of its own for the check.
#pragma once

#include <cstddef>

#include <span>

#include "core/communicator_state.h"
#include "core/request.h"
#include "validation/call_fingerprint.h"

namespace collective::internal {

// Every rank's fingerprint, indexed by rank, in state.scratch_check (valid
// until the next call). Bounded by request.deadline; uses the call's
// message tag, before any message of the algorithm.
std::span<const CallFingerprint> exchange_fingerprints(const CallFingerprint& mine,
                                                       const Request& request,
                                                       CommunicatorState& state);

// Up to this many ranks the check is a direct exchange (every rank sends its
// fingerprint to every other), which can carry a small input with each
// fingerprint (exchange_carrying_input).
inline constexpr int kDirectExchangeMaxRanks = 16;
// The largest input that rides with a fingerprint in the direct exchange.
// Every direct exchange receives into slots this much larger than a
// fingerprint, so a rank that carries and one that does not still match
// message for message (and learn from the check that their calls differ).
// 64 KiB: a posted receive larger than its message costs nothing, and the
// slots (p of them) are allocated once per communicator.
inline constexpr std::size_t kCarriedInputBytes = 64 * 1024;

// Whether check_across_ranks goes through the direct exchange over MPI
// (not through the node's segment, not the dissemination all-gather) with
// room for a carried input (COLLECTIVE_MAX_MESSAGE_BYTES at least a slot).
bool check_is_direct_exchange(CommunicatorState& state);

// The cross-rank check of a call whose input (`bytes` <= kCarriedInputBytes)
// rides with this rank's fingerprint; raises as check_across_ranks does.
// Returns every rank's input (at [r] for rank r; this rank's is `input`),
// valid until the next call on `state`.
std::span<const void* const> exchange_carrying_input(const CallFingerprint& mine, const void* input,
                                                     std::size_t bytes, const Request& request,
                                                     CommunicatorState& state);

// Raises when the ranks' fingerprints `all` (rank r's at all[r]) do not
// agree, as check_across_ranks describes.
void raise_unless_agreed(std::span<const CallFingerprint> all, const CallFingerprint& mine,
                         const Request& request, const CommunicatorState& state);

// Exchanges `mine` (through the node's segment when every rank is on one
// node and it exists: node_board_check.h) and raises when the ranks do not
// agree:
//  - some rank rejected its arguments: this rank, if it is one of them,
//    returns (the caller raises its own error); the others raise
//    InvalidArgumentError (UnsupportedError when every rejection was one)
//    naming the rejecting ranks and their causes;
//  - the calls differ: MismatchError on every rank, naming each rank's
//    values.
// The communicator stays usable after either error.
void check_across_ranks(const CallFingerprint& mine, const Request& request,
                        CommunicatorState& state);

}  // namespace collective::internal
