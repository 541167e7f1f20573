// The cross-rank check (cross_rank_check.h) through the node's shared
// segment, for communicators whose ranks all live on one node: each rank
// writes its call's fingerprint into its inline box of the call's round
// and reads every other rank's there, one cache-line hand-off per peer
// instead of 2(p-1) MPI messages. An algorithm whose input fits the box
// (the small shared-memory all-reduce) posts its input in the same box:
// the check then costs the call nothing it did not already do.
//
// Used once the node segment exists (made by the first shared-memory
// call, which every rank made, since every earlier call agreed); before
// that, and across nodes, the check goes over MPI.
#pragma once

#include <cstdint>
#include <span>

#include "transport/shm/node_segment.h"
#include "core/communicator_state.h"
#include "core/request.h"
#include "cross_rank_check/call_fingerprint.h"

namespace collective::internal {

// The segment to check through, or nullptr: the check goes over MPI.
NodeSegment* node_board(CommunicatorState& state);

// Posts `mine` in this rank's box of the segment's next round, with
// `payload` (at most kInlineBytes; empty for a rejected fingerprint) after
// the call header, waits until every rank posted, and raises as
// check_across_ranks does when they do not agree (the round finished
// first, so the communicator stays usable). On agreement returns the
// round: every rank's payload is at inline_data(rank, round); the caller
// finishes the round once it has read them.
std::uint64_t check_on_node(NodeSegment& segment, const CallFingerprint& mine,
                            const Request& request, CommunicatorState& state,
                            std::span<const std::byte> payload);

}  // namespace collective::internal
