#include "algorithms/shared_memory.h"

#include <array>
#include "algorithms/node_phases.h"
#include "algorithms/shared_memory_exchange.h"
#include "transport/shm/node_segment.h"
#include "core/env_params.h"
#include "cost/cost_model.h"
#include "cross_rank_check/node_board_check.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace collective::internal {
namespace {

// Every rank copies its input in and reduces all L inputs itself: one
// hand-off a round.
double redundant_seconds(const Shape& shape) {
  const double n = shape.bytes;
  return slot_rounds(n) * handoff_seconds(shape) +
         node_work_seconds(shape, 0, n, shape.per_node * n);
}

// Up to here every rank reducing every input costs less than a second
// hand-off on any node the model knows; above, up to the boxes' 4 KiB too,
// the estimates decide (8 ranks of 4 KiB are 32 KiB of reduction each).
constexpr double kAlwaysRedundantBytes = 976;

// The size rules of the choice: above COLLECTIVE_SHM_SMALL_BYTES split,
// up to kAlwaysRedundantBytes redundant, between them no answer (the
// estimates decide). Asked before the node's shape is built: small calls
// ask on every call, and the shape costs 120 instructions.
std::optional<bool> redundant_by_size(double bytes) {
  if (bytes > static_cast<double>(env_params().shm_small_bytes)) return false;
  if (bytes <= kAlwaysRedundantBytes) return true;
  return std::nullopt;
}

bool redundant_is_cheaper(const Shape& shape) {
  if (const auto by_size = redundant_by_size(shape.bytes)) return *by_size;
  // Split: the input staged, 1/L of the reduction, the result copied out,
  // two hand-offs.
  const double n = shape.bytes;
  const double split = 2.0 * handoff_seconds(shape) + node_work_seconds(shape, 0, n + n, n);
  return redundant_seconds(shape) <= split;
}

// Whether every rank of `node` should reduce the whole buffer itself (one
// hand-off a round) rather than split the work (two): when the duplicated
// reduction costs less than the hand-off it saves, and the buffer is within
// COLLECTIVE_SHM_SMALL_BYTES. Same on every rank.
bool shared_memory_redundant(std::size_t bytes, const Topology& topology, int node) {
  if (const auto by_size = redundant_by_size(static_cast<double>(bytes))) return *by_size;
  return redundant_is_cheaper(node_shape(bytes, topology, node));
}

// all_to_all inside one node of L ranks (shared_memory_exchange.cc), for n
// = L blocks per rank: its send buffer read once and its receive buffer
// written once, (L-1)/L of n staged and read back through the cache, and a
// hand-off per round, kSegmentDepth rounds in flight; small calls take one
// hand-off through the boxes, blocks of kCrossMemoryAttachBytes two and
// one copy (where the kernel refuses it, the slots' rounds cost more than
// this says; on one node no other algorithm has an estimate anyway). all_to_all_v's counts differ
// by rank and the estimate must not (selection is the same on every rank): it is the hand-off of
// its header and one round.
double all_to_all_seconds(const Request& request, const Shape& shape) {
  const double local = shape.per_node;
  if (request.kind == CollectiveKind::kAllToAllV)
    return kCallSeconds + 2.0 * handoff_seconds(shape);
  const double n = shape.bytes * local;
  if (n <= static_cast<double>(kInlineBytes)) return kCallSeconds + handoff_seconds(shape);
  // By cross-memory attach: two hand-offs, one copy of the buffer.
  if (shape.bytes >= static_cast<double>(kCrossMemoryAttachBytes)) {
    return kCallSeconds + 2.0 * handoff_seconds(shape) + node_work_seconds(shape, n + n, 0.0, 0.0);
  }
  const double moved = n * (local - 1.0) / local;
  return kCallSeconds + handoff_seconds(shape) * std::min(slot_rounds(n), double{kSegmentDepth}) +
         node_work_seconds(shape, n + n, moved + moved, 0.0);
}

// all_gather(_v), gather and scatter inside one node (the exchange of
// shared_memory_exchange.cc), offered to AUTO only for the single-copy
// form, a largest block of kCrossMemoryAttachBytes or more: the busiest
// rank's `received` bytes (all_gather(_v): every block but the smallest;
// gather: the root's, scatter: the root's peers') read from memory and
// written once, and two hand-offs. Where every rank's blocks fit the box
// of the first hand-off (exchange_fits_boxes): that one hand-off, which
// carries the cross-rank check too. Between the two, all_gather(_v) and
// broadcast take the rounds through the slots (below); gather and scatter
// none (measured 0.3x MPI's at 32 KiB blocks with the machine loaded,
// docs/performance.md: the size rule's mpi serves). gather_v's and
// scatter_v's counts are the root's alone and the estimate must be the
// same on every rank: none either.
std::optional<double> gather_scatter_seconds(const Request& request, const Shape& shape) {
  const double element = static_cast<double>(request.element_bytes());
  double total = 0.0;    // bytes in all blocks
  double largest = 0.0;  // the largest block
  double smallest = 0.0;
  if (request.kind == CollectiveKind::kAllGatherV) {
    for (std::size_t q = 0; q < request.recv_counts.size(); ++q) {
      const double block = static_cast<double>(request.recv_counts[q]) * element;
      total += block;
      largest = std::max(largest, block);
      smallest = q == 0 ? block : std::min(smallest, block);
    }
  } else if (request.kind == CollectiveKind::kAllGather ||
             request.kind == CollectiveKind::kGather || request.kind == CollectiveKind::kScatter) {
    largest = smallest = shape.bytes;
    total = shape.bytes * shape.per_node;
  } else if (request.kind == CollectiveKind::kBroadcast) {
    // One block, the root's, that every other rank receives once.
    largest = total = shape.bytes;
  } else {
    return std::nullopt;
  }
  // Every rank's blocks in the first hand-off's box, the check with them.
  if (exchange_fits_boxes(request, shape.per_node)) {
    return kCallSeconds + handoff_seconds(shape);
  }
  const double received = total - smallest;
  if (largest < static_cast<double>(kCrossMemoryAttachBytes)) {
    if (request.kind != CollectiveKind::kAllGather && request.kind != CollectiveKind::kAllGatherV &&
        request.kind != CollectiveKind::kBroadcast) {
      return std::nullopt;
    }
    // all_gather(_v) or a broadcast through the slots: the header
    // hand-off, then a hand-off a round; a block staged once, each
    // receiver's read back, the input read and the output written.
    // Measured faster than the ring from 2 to 32 KiB blocks at 2 and 4
    // ranks on 2 cores (docs/algorithms.md); all_gather_v's uneven blocks
    // too, once copies between addresses that differ modulo 16 stopped
    // going through memcpy's slow path (kernels/plain_copy.h).
    const double rounds = std::min(slot_rounds(largest), double{kSegmentDepth});
    return kCallSeconds + (1.0 + rounds) * handoff_seconds(shape) +
           node_work_seconds(shape, largest + total, largest + received, 0.0);
  }
  return kCallSeconds + 2.0 * handoff_seconds(shape) +
         node_work_seconds(shape, received + received, 0.0, 0.0);
}

// Whether a reduce_scatter's whole input (`ranks` blocks) fits one box.
bool reduce_scatter_fits_box(const Request& request, int ranks) {
  return request.bytes() <= kInlineBytes / static_cast<std::size_t>(ranks);
}

// reduce_scatter inside one node of L ranks, a block of n bytes each: the
// whole input (L n) in the boxes with the check, each rank reducing its
// block of every box: one hand-off. Larger: rounds through the slots
// (node_reduce_scatter), one hand-off each; per rank its input read once
// and (L-1)/L of it staged, its block of every rank's input reduced, its
// block written once. No copy-out phase: each rank's reduced block is its
// output.
double reduce_scatter_seconds(const Request& request, const Shape& shape) {
  const double n = shape.bytes;
  const double whole = n * shape.per_node;
  if (request.count > 0 && reduce_scatter_fits_box(request, shape.per_node)) {
    return kCallSeconds + handoff_seconds(shape) + node_work_seconds(shape, 0.0, whole, whole);
  }
  const double staged = whole - n;
  return kCallSeconds + slot_rounds(whole) * handoff_seconds(shape) +
         node_work_seconds(shape, whole + n, staged, whole);
}

}  // namespace

std::span<const CollectiveKind> SharedMemoryAlgorithm::serves() const {
  static constexpr std::array kServed = {
      CollectiveKind::kAllReduce, CollectiveKind::kAllToAll,      CollectiveKind::kAllToAllV,
      CollectiveKind::kAllGather, CollectiveKind::kAllGatherV,    CollectiveKind::kGather,
      CollectiveKind::kGatherV,   CollectiveKind::kScatter,       CollectiveKind::kScatterV,
      CollectiveKind::kBroadcast, CollectiveKind::kReduceScatter, CollectiveKind::kReduce};
  return kServed;
}

Support SharedMemoryAlgorithm::supports_served(const Request& request,
                                               const CommunicatorState& state) const {
  if (request.memory == MemoryKind::kDevice) {
    return Support::no("shared_memory serves host buffers only; device buffers need nccl");
  }
  if (!state.topology) return Support::no("shared_memory needs the communicator's topology");
  if (const std::string* unavailable = node_segment_unavailable(state)) {
    return Support::no(
        "shared_memory needs the node's shared-memory segment, which this communicator "
        "could not set up: " +
        *unavailable);
  }
  if (state.topology->node_count() != 1) {
    return Support::no("shared_memory needs every rank on one node; these ranks span " +
                       std::to_string(state.topology->node_count()) + " nodes (use hierarchical)");
  }
  return Support::yes();
}

bool SharedMemoryAlgorithm::carries_check(const Request& request, CommunicatorState& state) const {
  if (request.kind == CollectiveKind::kAllToAll) {
    // The send buffer rides with the fingerprint when it fits the box and
    // the segment serves the call as it is (a rank whose call differs
    // would never join a setup).
    return all_to_all_fits_boxes(request, state.size) && node_board(state) != nullptr &&
           node_segment_serves_without_setup(request, state);
  }
  if (request.kind == CollectiveKind::kReduceScatter) {
    // The whole input rides with the fingerprint when it fits the box.
    return request.count > 0 && reduce_scatter_fits_box(request, state.size) &&
           node_board(state) != nullptr;
  }
  if (request.kind != CollectiveKind::kAllReduce && request.kind != CollectiveKind::kReduce) {
    // all_to_all_v, all_gather(_v), gather(_v), scatter(_v), broadcast
    // always begin with a hand-off through the boxes (the blocks' header,
    // and the blocks that fit): the fingerprint rides in it. Looked up at
    // count 0, the segment serves them as it is once it exists.
    return node_board(state) != nullptr;
  }
  // all_reduce and reduce: the input rides with it in the one-step form.
  return request.count > 0 && request.bytes() <= kInlineBytes && node_board(state) != nullptr &&
         shared_memory_redundant(request.bytes(), *state.topology,
                                 state.topology->node_of(state.rank));
}

void SharedMemoryAlgorithm::run(const Request& request, CommunicatorState& state) const {
  switch (request.kind) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kReduce: return all_reduce(request, state);
    case CollectiveKind::kReduceScatter: return reduce_scatter(request, state);
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kAllGatherV:
    case CollectiveKind::kGather:
    case CollectiveKind::kGatherV:
    case CollectiveKind::kScatter:
    case CollectiveKind::kScatterV:
    case CollectiveKind::kBroadcast: return shared_memory_exchange(request, state);
    case CollectiveKind::kBarrier:
    case CollectiveKind::kReduceScatterV: refuse_unserved(request, state);
  }
}

// all_reduce, and reduce: the same rounds, only the root receiving (the
// others contribute, and in the split form reduce their region for it).
void SharedMemoryAlgorithm::all_reduce(const Request& request, CommunicatorState& state) const {
  const bool receives = request.kind != CollectiveKind::kReduce || state.rank == request.root;
  void* output = receives ? request.recv : nullptr;
  if (request.carried_check != nullptr) {
    // The input rides in the box with the fingerprint; once the check
    // agrees, every rank's input is there.
    NodeSegment& segment = *node_board(state);
    NodeWork work{request, segment, request.type, request.op, state.size};
    const std::uint64_t round =
        check_on_node(segment, *request.carried_check, request, state,
                      {static_cast<const std::byte*>(request.send), request.bytes()});
    return node_all_reduce_boxes(work, round, request.send, output, request.count);
  }
  if (request.count == 0) return;
  NodeSegment& segment = NodeSegment::of(request, state);
  NodeWork work{request, segment, request.type, request.op, state.size};
  work.streaming_bytes = streaming_threshold(*state.topology, state.rank);
  const bool small = shared_memory_redundant(request.bytes(), *state.topology,
                                             state.topology->node_of(state.rank));
  if (request.bytes() <= kInlineBytes || request.kind == CollectiveKind::kReduce) {
    // Latency-bound calls, handed over in the inline boxes when the one-step
    // form takes them: the handoff way is not worth timing. A reduce's
    // time (the root's alone waits for the others) would mislead the
    // tuner the all_reduces share: through the cache.
    return node_all_reduce(work, request.send, output, request.count, small);
  }
  const HandoffTuner::Choice handoff = segment.handoff().choose(request.bytes());
  work.handoff = handoff.way;
  node_all_reduce(work, request.send, output, request.count, small);
  segment.handoff().record(handoff, request.bytes());
}

void SharedMemoryAlgorithm::reduce_scatter(const Request& request, CommunicatorState& state) const {
  // Block j of the input is local rank j's: on one node the local ranks
  // are the communicator's, in order.
  const auto ranks = static_cast<std::size_t>(state.size);
  if (request.carried_check != nullptr) {
    // Every rank's whole input rides in its box with the fingerprint; once
    // the check agrees, each rank reduces its block of every box.
    NodeSegment& segment = *node_board(state);
    NodeWork work{request, segment, request.type, request.op, state.size};
    const std::uint64_t round =
        check_on_node(segment, *request.carried_check, request, state,
                      {static_cast<const std::byte*>(request.send), request.bytes() * ranks});
    const std::size_t own = static_cast<std::size_t>(state.rank) * request.bytes();
    return node_all_reduce_boxes(work, round, static_cast<const std::byte*>(request.send) + own,
                                 request.recv, request.count, own);
  }
  if (request.count == 0) return;
  Request whole = request;  // the segment sized for the whole input
  whole.count = request.count * ranks;
  NodeSegment& segment = NodeSegment::of(whole, state);
  NodeWork work{request, segment, request.type, request.op, state.size};
  const NodeRounds rounds = node_reduce_scatter(
      work, RegionLayout::blocks(request.count, state.size, request.element_bytes()), request.send,
      request.recv);
  if (!rounds.input_read_in_place) return;
  // Peers read this rank's input in place: it is the caller's again once
  // every peer is through the last round.
  for (int q = 0; q < segment.local_size(); ++q) {
    if (q != segment.local_rank()) segment.wait(q, NodeSegment::Flag::kDone, rounds.last, request);
  }
}

// Inside one node of L ranks (node_phases.cc): per rank, the input read
// once and the output written once (streamed), (L-1)/L of it staged and
// all of it copied out of the result slots (cached), and a reduction
// reading n bytes; two hand-offs a round, pipelined over the segment's
// kSegmentDepth slots: one round's worth of them counts.
std::optional<double> SharedMemoryAlgorithm::estimate_seconds(const Request& request,
                                                              const Topology& topology) const {
  if (topology.size() < 1) return std::nullopt;
  const Shape shape = shape_of(request, topology);
  if (shape.nodes > 1) return std::nullopt;
  if (request.kind == CollectiveKind::kAllToAll || request.kind == CollectiveKind::kAllToAllV) {
    return all_to_all_seconds(request, shape);
  }
  if (request.kind == CollectiveKind::kAllGather || request.kind == CollectiveKind::kAllGatherV ||
      request.kind == CollectiveKind::kGather || request.kind == CollectiveKind::kGatherV ||
      request.kind == CollectiveKind::kScatter || request.kind == CollectiveKind::kScatterV ||
      request.kind == CollectiveKind::kBroadcast) {
    return gather_scatter_seconds(request, shape);
  }
  if (request.kind == CollectiveKind::kReduceScatter) return reduce_scatter_seconds(request, shape);
  // A reduce takes the all-reduce's rounds; only its copy-out is the
  // root's alone.
  if (request.kind != CollectiveKind::kAllReduce && request.kind != CollectiveKind::kReduce) {
    return std::nullopt;
  }
  if (redundant_is_cheaper(shape)) return kCallSeconds + redundant_seconds(shape);
  const double n = shape.bytes;
  const double local = shape.per_node;
  const double staged = n * (local - 1.0) / local;
  return kCallSeconds +
         2.0 * handoff_seconds(shape) * std::min(slot_rounds(n), double{kSegmentDepth}) +
         node_work_seconds(shape, n, staged + n, n);
}

}  // namespace collective::internal
