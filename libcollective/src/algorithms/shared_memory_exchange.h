// Block exchanges inside one node through the node's segment
// (docs/algorithms.md, "shared_memory: all_to_all, gathers and scatters"):
// all_to_all(_v), all_gather(_v), gather(_v), scatter(_v) and broadcast are
// each a set of blocks, one per (sender, receiver) pair. Every block goes
// through the sender's staging slots in pieces (of slot / L bytes; a sender
// with one block for all, all_gather(_v)'s, gather's and broadcast's root,
// stages it once in the whole slot), rounds pipelined kSegmentDepth deep, or is read straight from
// the sender's buffer: by cross-memory attach from kCrossMemoryAttachBytes (core/block_route.h;
// the route measured faster, block_route_choice.h), or with memcpy when it
// lies in a Communicator::allocate allocation (one copy). Small all_to_all calls travel in the
// inline boxes: one hand-off; so do the other kinds' blocks that fit the box of their first
// hand-off.
#pragma once

#include <cstddef>

#include "core/block_route.h"
#include "core/communicator_state.h"
#include "core/request.h"

namespace collective::internal {

// Whether an all_to_all's whole send buffer fits one inline box at
// `ranks` ranks: it then goes in one hand-off, which can carry the
// cross-rank check too (request.carried_check).
bool all_to_all_fits_boxes(const Request& request, int ranks);

// Whether every rank's blocks for its peers fit its box in the first
// hand-off of an all_gather(_v), gather, scatter or broadcast at `ranks`
// local ranks, which then moves them all (with the cross-rank check when
// carried): one hand-off. Known alike on every rank for these kinds only (their counts
// agree); false for the others, whose counts differ by rank.
bool exchange_fits_boxes(const Request& request, int ranks);

// Runs an all_to_all, all_to_all_v, all_gather(_v), gather(_v),
// scatter(_v) or broadcast whose ranks all share one node. A rank
// receiving at least streaming_threshold() bytes through the slots writes
// them with non-temporal stores.
void shared_memory_exchange(const Request& request, CommunicatorState& state);

}  // namespace collective::internal
