#include "algorithms/ring.h"

#include <array>
#include "cost/cost_model.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "algorithms/chunk_layout.h"
#include "core/env_params.h"
#include "kernels/float32_partials.h"
#include "kernels/multi_source_reduce.h"
#include "kernels/reduce_kernels.h"
#include "transport/mpi/peer_exchange.h"
#include "core/trace.h"
#include "cross_rank_check/cross_rank_check.h"
#include "kernels/plain_copy.h"

namespace collective::internal {
namespace {

// Enumerates the (step, segment) pairs of consecutive ring steps, in the
// order both neighbours send and receive them.
class StepSegmentCursor {
 public:
  StepSegmentCursor(int steps, std::function<std::size_t(int)> segments_in_step)
      : steps_(steps), segments_in_step_(std::move(segments_in_step)) {}

  bool next(int& step, std::size_t& segment) {
    while (step_ < steps_ && segment_ >= segments_in_step_(step_)) {
      ++step_;
      segment_ = 0;
    }
    if (step_ >= steps_) return false;
    step = step_;
    segment = segment_++;
    return true;
  }

 private:
  int steps_;
  std::function<std::size_t(int)> segments_in_step_;
  int step_ = 0;
  std::size_t segment_ = 0;
};

// Where the reduce-scatter phase keeps partial sums of the chunks it
// forwards: in place in the output (all_reduce, whose output has room for
// every chunk) or in two scratch chunks used alternately by step parity
// (reduce_scatter and reduce, whose outputs hold one chunk or none, and
// 16-bit all_reduce, whose float32 partials do not fit its output).
struct PartialSums {
  std::byte* output_base = nullptr;  // set: partials live at output_base + chunk offset
  std::byte* alternating = nullptr;  // else: two areas of chunk_stride bytes
  std::size_t chunk_stride = 0;
};

// The pipelining unit: larger across nodes, where every segment pays a
// network rendezvous. The same on every rank (the topology is). Not for the
// deterministic form, whose receive slots hold a segment per peer (p-1 of
// them, four deep): 4 MiB segments would make that 240 MiB at 16 ranks.
std::size_t segment_bytes(const Request& request, const CommunicatorState& state) {
  const bool across_nodes =
      state.spans_nodes || (state.topology && state.topology->node_count() > 1);
  return across_nodes && !request.deterministic ? env_params().ring_segment_bytes_across_nodes
                                                : env_params().ring_segment_bytes;
}

class RingRun {
 public:
  RingRun(const Request& request, CommunicatorState& state)
      : request_(request),
        state_(state),
        exchange_(request, state, "ring"),
        p_(state.size),
        r_(state.rank),
        next_((state.rank + 1) % state.size),
        prev_((state.rank + state.size - 1) % state.size),
        element_(request.element_bytes()),
        segmentation_(segmentation_for(segment_bytes(request, state), element_)),
        depth_(env_params().ring_pipeline_depth),
        wide_(keeps_float32_partials(request.type, request.op) && state.size > 2),
        partial_element_(wide_ ? sizeof(float) : element_) {}

  void all_reduce() {
    const auto layout = ChunkLayout::balanced(request_.count, p_);
    auto* output = static_cast<std::byte*>(request_.recv);
    const auto* input = static_cast<const std::byte*>(request_.send);
    // As soon as a segment of this rank's own chunk is final, the all-gather
    // can start sending it: the two phases overlap.
    auto start_gather = [&](std::byte* segment, std::size_t bytes) {
      exchange_.send(segment, bytes, next_, "ring all-gather", 0);
    };
    if (request_.deterministic) {
      ordered_reduce_scatter_phase(layout, input, output + layout.offset(r_) * element_,
                                   start_gather);
    } else {
      const std::size_t stride = layout.max_length() * partial_element_;
      const PartialSums partials =
          wide_ ? PartialSums{nullptr, state_.scratch_work.get(2 * stride), stride}
                : PartialSums{output, nullptr, 0};
      reduce_scatter_phase(layout, input, partials, output + layout.offset(r_) * element_,
                           start_gather);
    }
    all_gather_phase(layout, output, /*own_chunk_sent=*/true);
  }

  void reduce_scatter() { reduce_scatter(ChunkLayout::blocks(request_.count, p_)); }

  // Block q of the input has recv_counts[q] elements, the blocks packed.
  void reduce_scatter_v() { reduce_scatter(ChunkLayout::packed(request_.recv_counts)); }

  void reduce_scatter(const ChunkLayout& layout) {
    if (request_.deterministic) {
      ordered_reduce_scatter_phase(layout, static_cast<const std::byte*>(request_.send),
                                   static_cast<std::byte*>(request_.recv), nullptr);
      exchange_.wait_all();
      return;
    }
    const std::size_t stride = layout.max_length() * partial_element_;
    std::byte* alternating = state_.scratch_work.get(2 * stride);
    reduce_scatter_phase(layout, static_cast<const std::byte*>(request_.send),
                         PartialSums{nullptr, alternating, stride},
                         static_cast<std::byte*>(request_.recv), nullptr);
    exchange_.wait_all();
  }

  void all_gather() { all_gather(ChunkLayout::blocks(request_.count, p_)); }

  // Rank q's block lands at recv_displacements[q]: the ring moves blocks
  // of their own lengths, pipelined by segment, so a link carries every
  // block but its receiver's.
  void all_gather_v() {
    all_gather(ChunkLayout::uneven(request_.recv_displacements, request_.recv_counts));
  }

  void all_gather(const ChunkLayout& layout) {
    auto* output = static_cast<std::byte*>(request_.recv);
    std::byte* own = output + layout.offset(r_) * element_;
    // A rank with no block of its own may pass a null send buffer.
    if (static_cast<const void*>(own) != request_.send && layout.length(r_) > 0) {
      plain_copy(own, request_.send, layout.length(r_) * element_);
    }
    all_gather_phase(layout, output, /*own_chunk_sent=*/false);
  }

  void reduce() {
    const auto layout = ChunkLayout::balanced(request_.count, p_);
    const int root = request_.root;
    const std::size_t stride = layout.max_length() * partial_element_;
    std::byte* work = state_.scratch_work.get(3 * stride);
    std::byte* final_chunk =
        r_ == root ? static_cast<std::byte*>(request_.recv) + layout.offset(r_) * element_
                   : work + 2 * stride;
    // Each owner streams its final segments straight to the root.
    auto to_root = [&](std::byte* segment, std::size_t bytes) {
      if (r_ != root) exchange_.send(segment, bytes, root, "ring reduce: result to root");
    };
    if (request_.deterministic) {
      ordered_reduce_scatter_phase(layout, static_cast<const std::byte*>(request_.send),
                                   final_chunk, to_root);
    } else {
      reduce_scatter_phase(layout, static_cast<const std::byte*>(request_.send),
                           PartialSums{nullptr, work, stride}, final_chunk, to_root);
    }
    if (r_ == root) {
      // Posted only now: in place, the root's output is also its input.
      exchange_.wait_all();
      auto* output = static_cast<std::byte*>(request_.recv);
      for (int c = 0; c < p_; ++c) {
        if (c == root) continue;
        const std::size_t length = layout.length(c);
        for (std::size_t j = 0; j < segmentation_.segments(length); ++j) {
          exchange_.recv(output + (layout.offset(c) + segmentation_.begin(j)) * element_,
                         segmentation_.length(length, j) * element_, c,
                         "ring reduce: result from owner");
        }
      }
    }
    exchange_.wait_all();
  }

  void broadcast() {
    // A chain root -> root+1 -> ... -> root-1, pipelined by segment.
    const int position = ring_index(r_ - request_.root, p_);
    auto* buffer = static_cast<std::byte*>(request_.recv);
    const std::size_t segments = segmentation_.segments(request_.count);
    auto segment_at = [&](std::size_t j) { return buffer + segmentation_.begin(j) * element_; };
    auto segment_bytes = [&](std::size_t j) {
      return segmentation_.length(request_.count, j) * element_;
    };
    if (position == 0) {
      for (std::size_t j = 0; j < segments; ++j) {
        exchange_.send(segment_at(j), segment_bytes(j), next_, "ring broadcast chain");
      }
    } else {
      std::vector<PeerExchange::Handle> arrivals;
      arrivals.reserve(segments);
      for (std::size_t j = 0; j < segments; ++j) {
        arrivals.push_back(
            exchange_.recv(segment_at(j), segment_bytes(j), prev_, "ring broadcast chain"));
      }
      for (std::size_t j = 0; j < segments; ++j) {
        exchange_.wait(arrivals[j]);
        if (position != p_ - 1) {
          exchange_.send(segment_at(j), segment_bytes(j), next_, "ring broadcast chain");
        }
      }
    }
    exchange_.wait_all();
  }

 private:
  using SegmentDone = std::function<void(std::byte* segment, std::size_t bytes)>;

  // The p-1 reduce-scatter steps. At step s this rank sends chunk r-s-1 and
  // receives chunk r-s-2 from its left neighbour, reducing it with its own
  // input; after the last step it holds chunk r fully reduced at
  // `own_result`, and `on_own_segment` has been called for each segment.
  // 16-bit SUM, MEAN and PROD (wide_) keep their partials in float32: step 0
  // sends raw 16-bit inputs, later steps float32 partials, and the last step
  // divides (MEAN) and rounds once into `own_result`.
  void reduce_scatter_phase(const ChunkLayout& layout, const std::byte* input,
                            const PartialSums& partials, std::byte* own_result,
                            const SegmentDone& on_own_segment) {
    const TraceScope traced("ring reduce-scatter");
    const int steps = p_ - 1;
    auto sent_chunk = [&](int step) { return ring_index(r_ - step - 1, p_); };
    auto received_chunk = [&](int step) { return ring_index(r_ - step - 2, p_); };
    auto segments_received = [&](int step) {
      return segmentation_.segments(layout.length(received_chunk(step)));
    };
    auto incoming_element = [&](int step) { return step > 0 ? partial_element_ : element_; };
    auto partial_at = [&](int step, int chunk) -> std::byte* {
      if (partials.output_base != nullptr) {
        return partials.output_base + layout.offset(chunk) * element_;
      }
      return partials.alternating + static_cast<std::size_t>(step % 2) * partials.chunk_stride;
    };

    // With the cross-rank check to make, the head of step 0's first segment
    // rides with this rank's fingerprint to the next rank, and the head of
    // the one it receives comes with the previous rank's; nothing else is
    // sent, and nothing written, before every rank's fingerprint agreed.
    auto head_bytes = [&](int chunk) {
      if (request_.carried_check == nullptr || layout.length(chunk) == 0) return std::size_t{0};
      return carried_head_bytes(segmentation_.length(layout.length(chunk), 0) * element_, element_);
    };
    const std::size_t head_sent = head_bytes(sent_chunk(0));
    const std::size_t head_received = head_bytes(received_chunk(0));
    const std::byte* carried_head = nullptr;
    if (request_.carried_check != nullptr) {
      const TraceScope checking("cross-rank check");
      const auto landed = carry_check(
          CarriedData{input + layout.offset(sent_chunk(0)) * element_, head_sent, next_}, request_,
          state_);
      carried_head = static_cast<const std::byte*>(landed[static_cast<std::size_t>(prev_)]);
    }

    // Step 0 sends this rank's own input for chunk r-1, all segments at once.
    std::vector<PeerExchange::Handle> phase_sends;
    {
      const int chunk = sent_chunk(0);
      const std::size_t length = layout.length(chunk);
      for (std::size_t j = 0; j < segmentation_.segments(length); ++j) {
        const std::size_t skip = j == 0 ? head_sent : 0;
        const std::size_t bytes = segmentation_.length(length, j) * element_ - skip;
        if (bytes == 0) continue;
        phase_sends.push_back(exchange_.send(
            input + (layout.offset(chunk) + segmentation_.begin(j)) * element_ + skip, bytes, next_,
            "ring reduce-scatter", 0));
      }
    }

    // Incoming segments land in `depth_` rotating slots.
    const std::size_t slot_bytes = segmentation_.segment_elements * partial_element_;
    std::byte* slots = state_.scratch_in.get(static_cast<std::size_t>(depth_) * slot_bytes);
    constexpr PeerExchange::Handle kNone = static_cast<PeerExchange::Handle>(-1);
    struct Posted {
      PeerExchange::Handle handle;
      int step;
      std::size_t segment;
    };
    std::vector<Posted> in_flight(static_cast<std::size_t>(depth_));
    StepSegmentCursor post_cursor(steps, segments_received);
    std::size_t posted = 0;
    auto post_next = [&](std::size_t slot) {
      int step = 0;
      std::size_t segment = 0;
      if (!post_cursor.next(step, segment)) return;
      const int chunk = received_chunk(step);
      const std::size_t bytes =
          segmentation_.length(layout.length(chunk), segment) * incoming_element(step);
      // The head of the first segment came with the check.
      const std::size_t skip = step == 0 && segment == 0 ? head_received : 0;
      in_flight[slot] =
          Posted{bytes == skip ? kNone
                               : exchange_.recv(slots + slot * slot_bytes + skip, bytes - skip,
                                                prev_, "ring reduce-scatter", step),
                 step, segment};
      ++posted;
    };
    for (int k = 0; k < depth_; ++k) post_next(static_cast<std::size_t>(k));

    // Sends that read a partial-sum area, by parity, so the area is not
    // overwritten (two steps later) before its send completed.
    std::vector<PeerExchange::Handle> forward_sends[2];
    const bool partials_reused = partials.output_base == nullptr;

    StepSegmentCursor cursor(steps, segments_received);
    int step = 0;
    std::size_t segment = 0;
    for (std::size_t item = 0; cursor.next(step, segment); ++item) {
      const std::size_t slot = item % static_cast<std::size_t>(depth_);
      if (in_flight[slot].handle != kNone) exchange_.wait(in_flight[slot].handle);
      const int chunk = received_chunk(step);
      const std::size_t length = segmentation_.length(layout.length(chunk), segment);
      const std::size_t within = segmentation_.begin(segment) * element_;
      const std::byte* own_input = input + layout.offset(chunk) * element_ + within;
      const bool last_step = step == steps - 1;
      std::byte* destination;
      if (last_step) {
        destination = own_result + within;
      } else {
        destination = partial_at(step, chunk) + segmentation_.begin(segment) * partial_element_;
        auto& same_parity = forward_sends[step % 2];
        if (partials_reused && segment < same_parity.size() && same_parity[segment] != kNone) {
          exchange_.wait(same_parity[segment]);
        }
      }
      const int divisor = last_step && request_.op == ReduceOp::kMean ? p_ : 1;
      {
        const TraceScope reducing("reduce");
        std::byte* incoming = slots + slot * slot_bytes;
        std::size_t done = 0;  // elements reduced from the carried head
        if (wide_) {
          // Step 0's incoming data is a raw input (16-bit), later ones partials.
          const std::size_t out_element = last_step ? element_ : partial_element_;
          if (item == 0 && head_received > 0) {
            done = head_received / element_;
            reduce_into_partial(destination, !last_step, own_input, carried_head, false, done,
                                request_.type, request_.op, divisor);
          }
          if (done < length) {
            reduce_into_partial(destination + done * out_element, !last_step,
                                own_input + done * element_,
                                incoming + done * incoming_element(step), step > 0, length - done,
                                request_.type, request_.op, divisor);
          }
        } else {
          if (item == 0 && head_received > 0) {
            done = head_received / element_;
            reduce_buffers(destination, own_input, carried_head, done, request_.type, request_.op,
                           divisor);
          }
          if (done < length) {
            const std::size_t at = done * element_;
            reduce_buffers(destination + at, own_input + at, incoming + at, length - done,
                           request_.type, request_.op, divisor);
          }
        }
      }
      post_next(slot);
      if (!last_step) {
        const auto handle = exchange_.send(destination, length * partial_element_, next_,
                                           "ring reduce-scatter", step + 1);
        phase_sends.push_back(handle);
        auto& same_parity = forward_sends[step % 2];
        if (same_parity.size() <= segment) same_parity.resize(segment + 1, kNone);
        same_parity[segment] = handle;
      } else if (on_own_segment) {
        on_own_segment(destination, length * element_);
      }
    }
    // The all-gather that follows writes where these sends read from.
    for (const auto handle : phase_sends) exchange_.wait(handle);
  }

  // The deterministic reduce-scatter: every rank sends its input's part of
  // chunk c straight to c's owner, segment by segment, and the owner reduces
  // each segment over the p contributions in rank order (reduce_sources:
  // ((x0 op x1) op x2) ..., 16-bit types in float32, rounded once), so the
  // result depends neither on p's ring positions nor on the segment size.
  // The same bytes cross the links as in the ring's p-1 steps, as p-1
  // concurrent messages. After it, this rank's chunk is final at
  // `own_result` and `on_own_segment` has been called for each segment.
  void ordered_reduce_scatter_phase(const ChunkLayout& layout, const std::byte* input,
                                    std::byte* own_result, const SegmentDone& on_own_segment) {
    const std::size_t own_length = layout.length(r_);
    const std::size_t own_segments = segmentation_.segments(own_length);
    const std::size_t peers = static_cast<std::size_t>(p_ - 1);
    // Contributions land in `depth_` rotating slots of one segment per peer
    // (as the ring's receives do), so they stay in cache and the scratch
    // does not grow with the buffer.
    const std::size_t slot_bytes = std::min(segmentation_.segment_elements, own_length) * element_;
    const std::size_t depth = static_cast<std::size_t>(depth_);
    std::byte* slots = state_.scratch_in.get(depth * peers * slot_bytes);
    auto slot_of = [&](int peer) { return static_cast<std::size_t>(peer < r_ ? peer : peer - 1); };
    auto landing = [&](std::size_t j, int peer) {
      return slots + ((j % depth) * peers + slot_of(peer)) * slot_bytes;
    };

    // Posted in segment order per peer, in the order the peer sends them
    // (MPI keeps the order of messages between two ranks with one tag).
    std::vector<PeerExchange::Handle> arrivals(own_segments * peers);
    auto post_segment = [&](std::size_t j) {
      if (j >= own_segments) return;
      const std::size_t bytes = segmentation_.length(own_length, j) * element_;
      for (int d = 1; d < p_; ++d) {
        const int peer = ring_index(r_ - d, p_);
        arrivals[j * peers + static_cast<std::size_t>(d - 1)] =
            exchange_.recv(landing(j, peer), bytes, peer,
                           "ordered reduce-scatter: contribution to this rank's chunk");
      }
    };
    for (std::size_t j = 0; j < depth; ++j) post_segment(j);
    // Each rank starts with the owner after it, so no owner gets every
    // rank's first segment at once.
    std::vector<PeerExchange::Handle> input_sends;
    std::size_t most_segments = 0;
    for (int c = 0; c < p_; ++c) {
      most_segments = std::max(most_segments, segmentation_.segments(layout.length(c)));
    }
    for (std::size_t j = 0; j < most_segments; ++j) {
      for (int d = 1; d < p_; ++d) {
        const int owner = ring_index(r_ + d, p_);
        const std::size_t length = layout.length(owner);
        if (j >= segmentation_.segments(length)) continue;
        input_sends.push_back(
            exchange_.send(input + (layout.offset(owner) + segmentation_.begin(j)) * element_,
                           segmentation_.length(length, j) * element_, owner,
                           "ordered reduce-scatter: contribution to the owner's chunk"));
      }
    }
    // In place (all_reduce, reduce_scatter's recv == send + r * count, a
    // root's reduce), `own_result` is exactly this rank's own source, which
    // reduce_sources allows; no other chunk of the input is written here.
    const int divisor = request_.op == ReduceOp::kMean ? p_ : 1;
    std::vector<const void*> sources(static_cast<std::size_t>(p_));
    for (std::size_t j = 0; j < own_segments; ++j) {
      const std::size_t within = segmentation_.begin(j) * element_;
      for (std::size_t d = 0; d < peers; ++d) exchange_.wait(arrivals[j * peers + d]);
      for (int q = 0; q < p_; ++q) {
        sources[static_cast<std::size_t>(q)] =
            q == r_ ? input + layout.offset(r_) * element_ + within : landing(j, q);
      }
      const std::size_t length = segmentation_.length(own_length, j);
      reduce_sources(own_result + within, sources.data(), p_, length, request_.type, request_.op,
                     divisor);
      post_segment(j + depth);  // into the slot just read
      if (on_own_segment) on_own_segment(own_result + within, length * element_);
    }
    // What follows (the all-gather, a root's receives) writes where the
    // input sends read from.
    for (const auto handle : input_sends) exchange_.wait(handle);
  }

  // The p-1 all-gather steps: at step s this rank sends chunk r-s and
  // receives chunk r-s-1, straight into `output`, forwarding it next step.
  void all_gather_phase(const ChunkLayout& layout, std::byte* output, bool own_chunk_sent) {
    const TraceScope traced("ring all-gather");
    const int steps = p_ - 1;
    auto chunk_segment = [&](int chunk, std::size_t j) {
      return output + (layout.offset(chunk) + segmentation_.begin(j)) * element_;
    };
    auto segment_bytes = [&](int chunk, std::size_t j) {
      return segmentation_.length(layout.length(chunk), j) * element_;
    };
    if (!own_chunk_sent) {
      for (std::size_t j = 0; j < segmentation_.segments(layout.length(r_)); ++j) {
        exchange_.send(chunk_segment(r_, j), segment_bytes(r_, j), next_, "ring all-gather", 0);
      }
    }
    struct Arrival {
      PeerExchange::Handle handle;
      int step;
      int chunk;
      std::size_t segment;
    };
    std::vector<Arrival> arrivals;
    for (int step = 0; step < steps; ++step) {
      const int chunk = ring_index(r_ - step - 1, p_);
      for (std::size_t j = 0; j < segmentation_.segments(layout.length(chunk)); ++j) {
        arrivals.push_back(Arrival{exchange_.recv(chunk_segment(chunk, j), segment_bytes(chunk, j),
                                                  prev_, "ring all-gather", step),
                                   step, chunk, j});
      }
    }
    for (const Arrival& arrival : arrivals) {
      exchange_.wait(arrival.handle);
      if (arrival.step < steps - 1) {
        exchange_.send(chunk_segment(arrival.chunk, arrival.segment),
                       segment_bytes(arrival.chunk, arrival.segment), next_, "ring all-gather",
                       arrival.step + 1);
      }
    }
    exchange_.wait_all();
  }

  const Request& request_;
  CommunicatorState& state_;
  PeerExchange exchange_;
  const int p_;
  const int r_;
  const int next_;
  const int prev_;
  const std::size_t element_;
  const Segmentation segmentation_;
  const int depth_;
  const bool wide_;                    // 16-bit partials kept in float32
  const std::size_t partial_element_;  // bytes per element of a partial
};

}  // namespace

std::span<const CollectiveKind> RingAlgorithm::serves() const {
  static constexpr std::array kServed = {
      CollectiveKind::kAllReduce,     CollectiveKind::kReduceScatter, CollectiveKind::kAllGather,
      CollectiveKind::kBroadcast,     CollectiveKind::kReduce,        CollectiveKind::kAllGatherV,
      CollectiveKind::kReduceScatterV};
  return kServed;
}

Support RingAlgorithm::supports_served(const Request& request,
                                       const CommunicatorState& state) const {
  (void)state;
  if (request.memory == MemoryKind::kDevice) {
    return Support::no("ring serves host buffers only; device buffers need nccl");
  }
  return Support::yes();
}

// The reduce-scatter's first message goes to the next rank: the check
// rides on it. Not for the deterministic form (its first messages go to
// every owner), all_gather and broadcast, which check first.
bool RingAlgorithm::carries_check(const Request& request, CommunicatorState& state) const {
  const bool reduce_scatter_first = request.kind == CollectiveKind::kAllReduce ||
                                    request.kind == CollectiveKind::kReduceScatter ||
                                    request.kind == CollectiveKind::kReduce;
  return reduce_scatter_first && !request.deterministic && request.memory == MemoryKind::kHost &&
         check_is_direct_exchange(state);
}

void RingAlgorithm::run(const Request& request, CommunicatorState& state) const {
  RingRun ring(request, state);
  switch (request.kind) {
    case CollectiveKind::kAllReduce: return ring.all_reduce();
    case CollectiveKind::kReduceScatter: return ring.reduce_scatter();
    case CollectiveKind::kAllGather: return ring.all_gather();
    case CollectiveKind::kReduce: return ring.reduce();
    case CollectiveKind::kBroadcast: return ring.broadcast();
    case CollectiveKind::kAllGatherV: return ring.all_gather_v();
    case CollectiveKind::kReduceScatterV: return ring.reduce_scatter_v();
    case CollectiveKind::kBarrier:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kGather:
    case CollectiveKind::kGatherV:
    case CollectiveKind::kScatter:
    case CollectiveKind::kScatterV: refuse_unserved(request, state);
  }
}

// 2(p-1) steps of a 1/p piece each (reduce-scatter, then all-gather), the
// NIC shared by the ring edges that leave the busiest node, and (p-1)/p of
// the buffer reduced.
namespace {

// all_gather_v and reduce_scatter_v, from recv_counts (the same on every
// rank): p-1 steps; pipelined by segment, the busiest link carries every
// block but its receiver's, at least the total less the smallest block.
double uneven_estimate(const Request& request, const Topology& topology) {
  std::size_t total = 0;
  std::size_t smallest = request.recv_counts.empty() ? 0 : request.recv_counts[0];
  for (const std::size_t count : request.recv_counts) {
    total += count;
    smallest = std::min(smallest, count);
  }
  const double element = static_cast<double>(request.element_bytes());
  Shape shape = shape_of(request, topology);
  const double p = shape.ranks;
  const double carried = (static_cast<double>(total - smallest)) * element;
  shape.bytes = static_cast<double>(total) * element;
  const int flows = shape.nodes > 1 ? ring_flows_per_node(topology) : 1;
  double seconds =
      kCallSeconds + (p - 1.0) * flat_step_seconds(topology, shape, carried / (p - 1.0), flows);
  if (request.kind == CollectiveKind::kReduceScatterV) {
    seconds += carried / kReduceBytesPerSecond * shape.oversubscription;
  }
  return seconds;
}

}  // namespace

std::optional<double> RingAlgorithm::estimate_seconds(const Request& request,
                                                      const Topology& topology) const {
  if (topology.size() < 1) return std::nullopt;
  if (request.kind == CollectiveKind::kAllGatherV ||
      request.kind == CollectiveKind::kReduceScatterV) {
    return uneven_estimate(request, topology);
  }
  if (request.kind != CollectiveKind::kAllReduce) return std::nullopt;
  const Shape shape = shape_of(request, topology);
  const double p = shape.ranks;
  const int flows = shape.nodes > 1 ? ring_flows_per_node(topology) : 1;
  return kCallSeconds +
         2.0 * (p - 1.0) * flat_step_seconds(topology, shape, shape.bytes / p, flows) +
         (p - 1.0) / p * shape.bytes / kReduceBytesPerSecond * shape.oversubscription;
}

const RingAlgorithm kRingAlgorithm;

}  // namespace collective::internal
