// The steps that the shared-memory and hierarchical algorithms take inside
// one node, through the node's segment (node_segment.h). A buffer is cut
// into one region per owner (RegionLayout); every phase walks the regions in
// rounds, each round moving one piece of every region, so that buffers of
// any size pass through slots of fixed size and the data of a round stays in
// cache between the copy in, the reduction and the copy out.
//
// Per round, with g the round number and slot = g % depth:
//   wait until every rank is done with the slot from round g - depth
//   copy in:   rank r copies its pieces of the other owners' regions into
//              its staging slot (skipped when its input is in a shared
//              allocation: owners then read it in place), flag posted = g
//   reduce:    owner j waits for every rank's posted >= g and reduces piece
//              j of every input, in local-rank order, flag reduced = g
//   copy out:  every rank waits for each owner's reduced >= g and copies
//              the reduced pieces into its output, flag done = g
#pragma once

#include <cstddef>
#include <cstdint>

#include "collective/topology.h"
#include "transport/shm/two_way_tuner.h"
#include "transport/shm/node_segment.h"
#include "core/request.h"

namespace collective::internal {

// Regions of a `count`-element buffer, one per owner: balanced in units of
// 64 bytes (so owners never write the same cache line), the last region
// taking the remainder. Region j covers [offset(j), offset(j) + length(j)).
class RegionLayout {
 public:
  RegionLayout(std::size_t count, int owners, std::size_t element_bytes);
  // Region j is block j of `block` elements: reduce_scatter's layout,
  // whose owners write their own buffers, never a shared line.
  static RegionLayout blocks(std::size_t block, int owners, std::size_t element_bytes);
  int owners() const { return owners_; }
  std::size_t offset(int region) const;
  std::size_t length(int region) const;
  std::size_t unit() const { return unit_; }  // elements per 64 bytes

 private:
  std::size_t count_;
  int owners_;
  std::size_t unit_;
  std::size_t units_;
  std::size_t block_ = 0;  // blocks(): every region this long
};

// Outputs of at least this size per rank go straight to memory: once the
// node's ranks together write half its last-level cache (kUnknownCacheBytes
// when unknown), the outputs would push the pipeline's slots out of the
// cache anyway. Every rank of the node writes its own output, so the cache
// is shared among them. Two topology lookups: asked where outputs may be
// that large, not on a small call's path.
std::size_t streaming_threshold(const Topology& topology, int rank);

// One node-level operation of a collective call.
struct NodeWork {
  const Request& request;
  NodeSegment& segment;
  DataType type;
  ReduceOp op;      // for the reducing phases
  int divisor = 1;  // MEAN: divide by this at the end of the reduction
  // node_reduce_scatter of float16/bfloat16: the owners' regions receive
  // the float32 accumulator (4 bytes an element), neither divided nor
  // rounded, for the steps across nodes (kernels/float32_partials.h).
  bool float32_regions = false;
  // Outputs of at least this many bytes are written with non-temporal
  // stores (streaming_copy.h): about half the node's last-level cache.
  std::size_t streaming_bytes = SIZE_MAX;
  // How the slots are written (two_way_tuner.h): through memory, staging
  // and result slots take non-temporal stores.
  Handoff handoff = Handoff::kThroughCache;
};

// All-reduce inside the node, every rank an owner. `small` selects the
// one-step form for small buffers: every rank reduces the whole buffer
// itself (one flag wait per round instead of two; the same order, so the
// same bits). A shared-allocation input is read in place (not with `small`).
// A null `output` makes it a reduce: this rank contributes (and, split,
// reduces its region for the others) but receives nothing.
void node_all_reduce(const NodeWork& work, const void* input, void* output, std::size_t count,
                     bool small);

// The one-round form for inputs of at most kInlineBytes, once every rank's
// input is in its box of `round` (posted by post_inline, or by the
// cross-rank check that carried it): every rank reduces all boxes itself,
// in local-rank order, then finishes the round; with a null `output` it
// only finishes the round (reduce off the root).
// `box_offset` bytes into every peer's box: where the elements to reduce
// start (reduce_scatter's block of this rank; 0 for all_reduce).
void node_all_reduce_boxes(const NodeWork& work, std::uint64_t round, const void* input,
                           void* output, std::size_t count, std::size_t box_offset = 0);

// Reduce-scatter inside the node to the first layout.owners() local ranks:
// owner j receives region j of the reduction at `own_region` (length(j)
// elements). Ranks beyond the owners only contribute (own_region unused).
// Returns whether peers read `input` in place (a Communicator::allocate
// buffer) and the last round: such an input is the caller's again once
// every peer is done with that round.
struct NodeRounds {
  bool input_read_in_place = false;
  std::uint64_t last = 0;
};
NodeRounds node_reduce_scatter(const NodeWork& work, const RegionLayout& layout, const void* input,
                               void* own_region);

// All-gather inside the node from the owners: region j of owner j's
// `buffer` is copied into region j of every rank's `buffer`.
void node_all_gather(const NodeWork& work, const RegionLayout& layout, void* buffer);

}  // namespace collective::internal
