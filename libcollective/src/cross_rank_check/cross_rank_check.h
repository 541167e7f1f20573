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
// Cost: one round of (p-1) 40-byte messages each way (256 from a rank that
// rejected its call), up to kDirectExchangeMaxRanks ranks; above that a
// dissemination all-gather of ceil(log2 p) rounds. Measured in
// docs/errors.md. Algorithms that message other ranks first (ring,
// recursive_doubling) carry the check in that first message instead
// (exchange_check_carrying), so that they pay no round of their own for it;
// hierarchical across nodes carries it on its ring's first message after its
// node step (two_stage_check.h).
#pragma once

#include <cstddef>

#include <span>

#include "core/communicator_state.h"
#include "core/request.h"
#include "cross_rank_check/call_fingerprint.h"
#include "cross_rank_check/carried_data.h"
#include "cross_rank_check/check_verdict.h"

namespace collective::internal {

// Up to this many ranks the check is a direct exchange (every rank sends its
// fingerprint to every other), which can carry the first bytes of an
// algorithm's data with a fingerprint (exchange_check_carrying).
inline constexpr int kDirectExchangeMaxRanks = 16;

// Whether check_across_ranks goes through the direct exchange over MPI
// (not through the node's segment, not the dissemination all-gather) with
// room for carried data (COLLECTIVE_MAX_MESSAGE_BYTES at least a slot).
bool check_is_direct_exchange(CommunicatorState& state);

// The cross-rank check made by an algorithm's first message (the call's
// request.carried_check): sends this rank's fingerprint to every other rank,
// with `carried` appended for its recipients, receives every other rank's,
// and raises as check_across_ranks does. On agreement returns where each
// rank's carried data is: at [q] for rank q (meaningful only for ranks that
// carried to this one, and for this rank, whose entry is carried.data; the
// algorithm knows which, and since the calls agree, how many bytes), valid
// until the next call on `state`. Nothing the caller owns is written before
// the verdict.
std::span<const void* const> exchange_check_carrying(const CallFingerprint& mine,
                                                     const CarriedData& carried,
                                                     const Request& request,
                                                     CommunicatorState& state);

// An algorithm that runs another on a sub-communicator as one of its steps
// (hierarchical's ring across nodes), and began the check on its own
// communicator: the inner algorithm's first message goes through it
// (Request::check_relay). carry() sends `carried` (`to` in the inner
// communicator's ranks) with the outer rank's fingerprint, finishes the
// check, raises as check_across_ranks does, and returns what
// exchange_check_carrying would, indexed by inner rank.
class CheckRelay {
 public:
  virtual std::span<const void* const> carry(const CarriedData& carried) = 0;

 protected:
  ~CheckRelay() = default;
};

// The check made by an algorithm's first message: through the request's
// check_relay when it has one, else exchange_check_carrying with
// request.carried_check.
std::span<const void* const> carry_check(const CarriedData& carried, const Request& request,
                                         CommunicatorState& state);

// Exchanges `mine` (through the node's segment when every rank is on one
// node and it exists: node_board_check.h) and raises when the ranks do not
// agree:
//  - some rank rejected its arguments: this rank, if it is one of them,
//    returns (the caller raises its own error); the others raise
//    InvalidArgumentError (UnsupportedError when every rejection was one)
//    naming the rejecting ranks and their causes;
//  - the calls differ: MismatchError on every rank, naming each rank's
//    values (for the v-forms' counts, the first disagreeing pair or
//    recv_counts entry and both values: vector_counts_check.h).
// The communicator stays usable after either error.
void check_across_ranks(const CallFingerprint& mine, const Request& request,
                        CommunicatorState& state);

}  // namespace collective::internal
