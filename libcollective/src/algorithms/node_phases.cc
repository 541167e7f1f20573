#include "algorithms/node_phases.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "kernels/multi_source_reduce.h"
#include "kernels/plain_copy.h"
#include "transport/shm/shared_allocation.h"
#include "kernels/streaming_copy.h"
#include "core/trace.h"
#include "cost/cost_model.h"

namespace collective::internal {

std::size_t streaming_threshold(const Topology& topology, int rank) {
  const Node& node = topology.node(topology.node_of(rank));
  const auto cache = node.l3_cache_bytes == 0 ? static_cast<std::uint64_t>(kUnknownCacheBytes)
                                              : node.l3_cache_bytes;
  const std::uint64_t ranks = node.ranks.empty() ? 1 : node.ranks.size();
  return static_cast<std::size_t>(cache / 2 / ranks);
}
namespace {

using Flag = NodeSegment::Flag;

constexpr std::size_t kNodeLineBytes = 64;

// Elements of one region moved per round: as many as let every owner's
// piece fit in one staging slot, in whole 64-byte units.
std::size_t piece_elements(std::size_t slot_bytes, int owners, std::size_t element,
                           std::size_t unit) {
  std::size_t piece = slot_bytes / (static_cast<std::size_t>(owners) * element);
  if (piece >= unit) piece -= piece % unit;
  return std::max<std::size_t>(piece, 1);
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Piece k of region j: where it starts in the buffer and how long it is.
struct Pieces {
  const RegionLayout& layout;
  std::size_t piece;
  std::size_t rounds() const {
    std::size_t longest = 0;
    for (int j = 0; j < layout.owners(); ++j) longest = std::max(longest, layout.length(j));
    return ceil_div(longest, piece);
  }
  std::size_t begin(int region, std::size_t k) const { return layout.offset(region) + k * piece; }
  std::size_t length(int region, std::size_t k) const {
    const std::size_t total = layout.length(region);
    const std::size_t start = k * piece;
    return start >= total ? 0 : std::min(piece, total - start);
  }
};

using CopyFunction = void (*)(void*, const void*, std::size_t);

// How a rank writes what its peers will read from a slot.
CopyFunction slot_copy(Handoff handoff) {
  return handoff == Handoff::kThroughMemory ? streaming_copy : plain_copy;
}

const std::byte* bytes_at(const void* base, std::size_t elements, std::size_t element) {
  return static_cast<const std::byte*>(base) + elements * element;
}
std::byte* bytes_at(void* base, std::size_t elements, std::size_t element) {
  return static_cast<std::byte*>(base) + elements * element;
}

// Copies this rank's pieces of round k into its staging slot: the pieces of
// every region except its own (which only it reads), or of all regions when
// it owns none.
void stage_input(NodeSegment& segment, const Pieces& pieces, std::size_t k, std::uint64_t round,
                 const void* input, std::size_t element, Handoff handoff) {
  const TraceScope traced("shm copy-in");
  std::byte* stage = segment.staging(segment.local_rank(), round);
  const CopyFunction copy = slot_copy(handoff);
  for (int j = 0; j < pieces.layout.owners(); ++j) {
    if (j == segment.local_rank()) continue;
    const std::size_t length = pieces.length(j, k);
    if (length == 0) continue;
    copy(stage + static_cast<std::size_t>(j) * pieces.piece * element,
         bytes_at(input, pieces.begin(j, k), element), length * element);
  }
}

// Owner r's reduction of piece k of its region over every local rank's
// input, in local-rank order, into `destination`.
void reduce_own_piece(const NodeWork& work, const Pieces& pieces, std::size_t k,
                      std::uint64_t round, const void* input, void* destination,
                      std::vector<const void*>& sources) {
  NodeSegment& segment = work.segment;
  const int r = segment.local_rank();
  const std::size_t element = element_size(work.type);
  const std::size_t length = pieces.length(r, k);
  if (length == 0) return;
  const std::size_t begin = pieces.begin(r, k);
  for (int q = 0; q < segment.local_size(); ++q) {
    if (q == r) {
      sources[static_cast<std::size_t>(q)] = bytes_at(input, begin, element);
      continue;
    }
    segment.wait(q, Flag::kPosted, round, work.request);
    const std::byte* in_place = segment.peer_input(q, round, work.request);
    sources[static_cast<std::size_t>(q)] =
        in_place != nullptr
            ? in_place + begin * element
            : segment.staging(q, round) + static_cast<std::size_t>(r) * pieces.piece * element;
  }
  const TraceScope traced("shm reduce");
  if (work.float32_regions) {
    reduce_sources_to_float32(static_cast<float*>(destination), sources.data(),
                              segment.local_size(), length, work.type, work.op);
    return;
  }
  reduce_sources(destination, sources.data(), segment.local_size(), length, work.type, work.op,
                 work.divisor);
}

// This rank's input is read in place by its peers when it lies in a
// Communicator::allocate buffer.
std::optional<SharedRange> shared_input(const void* input, std::size_t bytes) {
  if (bytes == 0) return std::nullopt;
  return shared_allocations().find(input, bytes);
}

// Local-rank inputs of one piece: on the stack for the usual node sizes.
class SourceList {
 public:
  explicit SourceList(int ranks) : count_(static_cast<std::size_t>(ranks)) {
    if (count_ > kOnStack) heap_.resize(count_);
  }
  const void** data() { return count_ > kOnStack ? heap_.data() : stack_; }

 private:
  static constexpr std::size_t kOnStack = 64;
  std::size_t count_;
  const void* stack_[kOnStack];
  std::vector<const void*> heap_;
};

void all_reduce_small(const NodeWork& work, const void* input, void* output, std::size_t count) {
  NodeSegment& segment = work.segment;
  const int r = segment.local_rank();
  const int ranks = segment.local_size();
  const std::size_t element = element_size(work.type);
  SourceList list(ranks);
  const void** sources = list.data();
  // Small enough for the inline boxes: one round, data beside its flag.
  if (count * element <= kInlineBytes) {
    const std::uint64_t round = segment.begin_round();
    segment.wait_slot_free(round, work.request);
    plain_copy(segment.inline_data(r, round), input, count * element);
    segment.publish_inline(round);
    return node_all_reduce_boxes(work, round, input, output, count);
  }
  const std::size_t piece = std::max<std::size_t>(1, segment.slot_bytes() / element);
  for (std::size_t first = 0; first < count; first += piece) {
    const std::size_t length = std::min(piece, count - first);
    const std::uint64_t round = segment.begin_round();
    segment.wait_slot_free(round, work.request);
    slot_copy(work.handoff)(segment.staging(r, round), bytes_at(input, first, element),
                            length * element);
    segment.publish_input(round, nullptr);
    segment.publish(Flag::kPosted, round);
    if (output == nullptr) {
      // Contributes only (reduce off the root): its slot stays until every
      // rank is done with the round (wait_slot_free).
      segment.finish_round(round);
      continue;
    }
    for (int q = 0; q < ranks; ++q) {
      if (q == r) {
        sources[q] = bytes_at(input, first, element);
        continue;
      }
      segment.wait(q, Flag::kPosted, round, work.request);
      sources[q] = segment.staging(q, round);
    }
    {
      const TraceScope traced("shm reduce");
      reduce_sources(bytes_at(output, first, element), sources, ranks, length, work.type, work.op,
                     work.divisor);
    }
    segment.finish_round(round);
  }
}

}  // namespace

void node_all_reduce_boxes(const NodeWork& work, std::uint64_t round, const void* input,
                           void* output, std::size_t count, std::size_t box_offset) {
  NodeSegment& segment = work.segment;
  const int r = segment.local_rank();
  const int ranks = segment.local_size();
  // Contributes only (reduce off the root): its box stays until every rank
  // is done with the round.
  if (output == nullptr) return segment.finish_round(round);
  SourceList list(ranks);
  const void** sources = list.data();
  for (int q = 0; q < ranks; ++q) {
    if (q == r) {
      sources[q] = input;
      continue;
    }
    segment.wait_inline(q, round, work.request);
    sources[q] = segment.inline_data(q, round) + box_offset;
  }
  {
    const TraceScope traced("shm reduce");
    reduce_sources(output, sources, ranks, count, work.type, work.op, work.divisor);
  }
  segment.finish_round(round);
}

RegionLayout::RegionLayout(std::size_t count, int owners, std::size_t element_bytes)
    : count_(count),
      owners_(owners),
      unit_(std::max<std::size_t>(1, kNodeLineBytes / element_bytes)),
      units_(ceil_div(count, std::max<std::size_t>(1, kNodeLineBytes / element_bytes))) {}

RegionLayout RegionLayout::blocks(std::size_t block, int owners, std::size_t element_bytes) {
  RegionLayout layout(block * static_cast<std::size_t>(owners), owners, element_bytes);
  layout.block_ = block;
  return layout;
}

std::size_t RegionLayout::offset(int region) const {
  const auto j = static_cast<std::size_t>(region);
  if (block_ != 0) return j * block_;
  const auto n = static_cast<std::size_t>(owners_);
  const std::size_t units_before = j * (units_ / n) + std::min(j, units_ % n);
  return std::min(count_, units_before * unit_);
}

std::size_t RegionLayout::length(int region) const {
  if (block_ != 0) return block_;
  const std::size_t end = region + 1 == owners_ ? count_ : offset(region + 1);
  return end - offset(region);
}

void node_all_reduce(const NodeWork& work, const void* input, void* output, std::size_t count,
                     bool small) {
  if (count == 0) return;
  if (small) return all_reduce_small(work, input, output, count);
  NodeSegment& segment = work.segment;
  const int r = segment.local_rank();
  const int ranks = segment.local_size();
  const std::size_t element = element_size(work.type);
  const RegionLayout layout(count, ranks, element);
  const Pieces pieces{layout, piece_elements(segment.slot_bytes(), ranks, element, layout.unit())};
  const std::optional<SharedRange> shared = shared_input(input, count * element);
  std::vector<const void*> sources(static_cast<std::size_t>(ranks));
  // An output larger than the cache share goes straight to memory.
  const bool stream_output = count * element >= work.streaming_bytes;
  const CopyFunction copy_out = stream_output ? streaming_copy : plain_copy;
  // Through memory, an owner reduces its piece into private scratch (in its
  // own cache), streams it to the result slot, and copies its own part of
  // the output from the scratch rather than back from memory.
  const bool through_memory = work.handoff == Handoff::kThroughMemory;
  std::byte* reduced_here =
      through_memory ? segment.private_scratch(pieces.piece * element) : nullptr;

  // A progress loop rather than one round after another: each pass does
  // whatever the flags allow (copy in ahead while slots are free, reduce a
  // round every rank has posted, copy out a round every owner has
  // reduced), so a rank never idles while it has work, whichever peer the
  // scheduler happens to run. Rounds are numbered across calls, so the
  // slot checks below hold at a call's start too.
  const std::uint64_t rounds = pieces.rounds();
  const std::uint64_t first = segment.reserve_rounds(rounds);
  const std::uint64_t end = first + rounds;
  const std::uint64_t depth = kSegmentDepth;
  std::uint64_t next_copy = first;
  std::uint64_t next_reduce = first;
  std::uint64_t next_gather = first;
  unsigned idle_passes = 0;
  EventSleeper sleeper(segment.event());
  // Whom the last pass waited for, for the timeout message.
  int blocking = r;
  Flag blocking_flag = Flag::kPosted;
  std::uint64_t blocking_round = first;
  auto all_reached = [&](Flag flag, std::uint64_t round) {
    for (int q = 0; q < ranks; ++q) {
      if (q != r && !segment.reached(q, flag, round)) {
        blocking = q;
        blocking_flag = flag;
        blocking_round = round;
        return false;
      }
    }
    return true;
  };

  while (next_gather < end) {
    bool progressed = false;
    // Copy in: this rank's staging slot of round g was last read by the
    // other owners' reductions of round g - depth.
    if (next_copy < end && (next_copy <= depth || all_reached(Flag::kReduced, next_copy - depth))) {
      const std::size_t k = next_copy - first;
      if (shared) {
        segment.publish_input(next_copy, &*shared);
      } else {
        segment.publish_input(next_copy, nullptr);
        stage_input(segment, pieces, k, next_copy, input, element, work.handoff);
      }
      segment.publish(Flag::kPosted, next_copy);
      ++next_copy;
      progressed = true;
    }
    // Reduce: every rank posted the round, and every rank, this one too,
    // has copied out the result slot's round g - depth.
    if (next_reduce < next_copy && next_reduce < next_gather + depth &&
        all_reached(Flag::kPosted, next_reduce) &&
        (next_reduce <= depth || all_reached(Flag::kDone, next_reduce - depth))) {
      const std::size_t k = next_reduce - first;
      std::byte* slot =
          segment.result(next_reduce) + static_cast<std::size_t>(r) * pieces.piece * element;
      reduce_own_piece(work, pieces, k, next_reduce, input, through_memory ? reduced_here : slot,
                       sources);
      if (through_memory) {
        // Its own input piece is read by no one else, so the output may
        // take the result now even when it is the input.
        const std::size_t bytes = pieces.length(r, k) * element;
        streaming_copy(slot, reduced_here, bytes);
        if (output != nullptr) {
          copy_out(bytes_at(output, pieces.begin(r, k), element), reduced_here, bytes);
        }
      }
      segment.publish(Flag::kReduced, next_reduce);
      ++next_reduce;
      progressed = true;
    }
    // Copy out: every owner reduced the round.
    if (next_gather < next_reduce && all_reached(Flag::kReduced, next_gather)) {
      const TraceScope traced("shm copy-out");
      const std::size_t k = next_gather - first;
      const std::byte* results = segment.result(next_gather);
      for (int j = 0; output != nullptr && j < ranks; ++j) {
        const std::size_t length = pieces.length(j, k);
        if (length == 0 || (through_memory && j == r)) continue;
        copy_out(bytes_at(output, pieces.begin(j, k), element),
                 results + static_cast<std::size_t>(j) * pieces.piece * element, length * element);
      }
      segment.publish(Flag::kDone, next_gather);
      ++next_gather;
      progressed = true;
    }
    if (progressed) {
      idle_passes = 0;
      sleeper.stop();
    } else {
      segment.stall(blocking, blocking_flag, blocking_round, work.request, idle_passes, sleeper);
    }
  }
}

NodeRounds node_reduce_scatter(const NodeWork& work, const RegionLayout& layout, const void* input,
                               void* own_region) {
  NodeSegment& segment = work.segment;
  const int r = segment.local_rank();
  const std::size_t element = element_size(work.type);
  const Pieces pieces{
      layout, piece_elements(segment.slot_bytes(), layout.owners(), element, layout.unit())};
  std::size_t count = 0;
  for (int j = 0; j < layout.owners(); ++j) count += layout.length(j);
  const std::optional<SharedRange> shared = shared_input(input, count * element);
  std::vector<const void*> sources(static_cast<std::size_t>(segment.local_size()));
  NodeRounds done{shared.has_value(), 0};

  const std::size_t rounds = pieces.rounds();
  for (std::size_t k = 0; k < rounds; ++k) {
    const std::uint64_t round = segment.begin_round();
    segment.wait_slot_free(round, work.request);
    if (shared) {
      segment.publish_input(round, &*shared);
    } else {
      segment.publish_input(round, nullptr);
      stage_input(segment, pieces, k, round, input, element, work.handoff);
    }
    segment.publish(Flag::kPosted, round);
    if (r < layout.owners()) {
      const std::size_t result_element = work.float32_regions ? sizeof(float) : element;
      reduce_own_piece(work, pieces, k, round, input,
                       bytes_at(own_region, k * pieces.piece, result_element), sources);
    }
    segment.finish_round(round);
    done.last = round;
  }
  return done;
}

void node_all_gather(const NodeWork& work, const RegionLayout& layout, void* buffer) {
  NodeSegment& segment = work.segment;
  const int r = segment.local_rank();
  const std::size_t element = element_size(work.type);
  const Pieces pieces{
      layout, piece_elements(segment.slot_bytes(), layout.owners(), element, layout.unit())};
  const std::size_t rounds = pieces.rounds();
  for (std::size_t k = 0; k < rounds; ++k) {
    const std::uint64_t round = segment.begin_round();
    segment.wait_slot_free(round, work.request);
    std::byte* results = segment.result(round);
    if (r < layout.owners()) {
      const std::size_t length = pieces.length(r, k);
      if (length != 0) {
        plain_copy(results + static_cast<std::size_t>(r) * pieces.piece * element,
                   bytes_at(buffer, pieces.begin(r, k), element), length * element);
      }
      segment.publish(Flag::kReduced, round);
    }
    for (int j = 0; j < layout.owners(); ++j) {
      const std::size_t length = pieces.length(j, k);
      if (j == r || length == 0) continue;
      segment.wait(j, Flag::kReduced, round, work.request);
      plain_copy(bytes_at(buffer, pieces.begin(j, k), element),
                 results + static_cast<std::size_t>(j) * pieces.piece * element, length * element);
    }
    segment.finish_round(round);
  }
}

}  // namespace collective::internal
