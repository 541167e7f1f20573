#include "algorithms/pairwise.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "cost/cost_model.h"
#include "transport/mpi/peer_exchange.h"
#include "kernels/plain_copy.h"

namespace collective::internal {
namespace {

// Steps whose messages are posted at once: enough to keep a link busy while
// the next step's messages are matched, few enough that a large p does not
// post p-1 receives at once (and, in place, one scratch block per step).
constexpr std::size_t kStepsInFlight = 4;

// Where block q of a call lives: what this rank sends rank q and where what
// q sends lands. In place (all_to_all's send == recv, all_to_all_v's too)
// the outgoing block is the incoming block's place, with its size.
class AllToAllBlocks {
 public:
  AllToAllBlocks(const Request& request, int rank)
      : request_(request),
        element_(request.element_bytes()),
        in_place_(request.in_place(rank)),
        send_(static_cast<std::byte*>(const_cast<void*>(request.send))),
        recv_(static_cast<std::byte*>(request.recv)) {}

  bool in_place() const { return in_place_; }

  std::byte* outgoing(int q) const {
    if (in_place_) return incoming(q);
    const auto at = static_cast<std::size_t>(q);
    return send_ + (variable() ? request_.send_displacements[at] : at * request_.count) * element_;
  }
  std::size_t outgoing_bytes(int q) const {
    if (in_place_) return incoming_bytes(q);
    return (variable() ? request_.send_counts[static_cast<std::size_t>(q)] : request_.count) *
           element_;
  }
  std::byte* incoming(int q) const {
    const auto at = static_cast<std::size_t>(q);
    return recv_ + (variable() ? request_.recv_displacements[at] : at * request_.count) * element_;
  }
  std::size_t incoming_bytes(int q) const {
    return (variable() ? request_.recv_counts[static_cast<std::size_t>(q)] : request_.count) *
           element_;
  }

 private:
  bool variable() const { return request_.kind == CollectiveKind::kAllToAllV; }

  const Request& request_;
  const std::size_t element_;
  const bool in_place_;
  std::byte* send_;
  std::byte* recv_;
};

// One step of the schedule: this rank sends its block for `send_to` and
// receives the block of `recv_from`.
struct Step {
  int send_to;
  int recv_from;
};

// The p-1 exchanges of this rank, in order. For a power of two, partner
// r XOR s (both directions with one peer, which pairs the ranks of a step
// into disjoint exchanges). Otherwise not in place, step s sends to r+s
// and receives from r-s; in place, where a block may be overwritten only
// after it went out, step s pairs r with s-r (mod p), so the block sent
// and the block received are the same one: each pair meets in exactly
// one of p steps, and a rank sits out the step where s-r = r.
std::vector<Step> schedule(int p, int r, bool in_place) {
  std::vector<Step> steps;
  steps.reserve(static_cast<std::size_t>(p - 1));
  if ((p & (p - 1)) == 0) {
    for (int s = 1; s < p; ++s) steps.push_back({r ^ s, r ^ s});
  } else if (!in_place) {
    for (int s = 1; s < p; ++s) steps.push_back({(r + s) % p, (r - s + p) % p});
  } else {
    for (int s = 0; s < p; ++s) {
      const int partner = ((s - r) % p + p) % p;
      if (partner != r) steps.push_back({partner, partner});
    }
  }
  return steps;
}

void run_pairwise(const Request& request, CommunicatorState& state) {
  PeerExchange exchange(request, state, "pairwise");
  const int p = state.size;
  const int r = state.rank;
  const AllToAllBlocks blocks(request, r);
  const std::vector<Step> steps = schedule(p, r, blocks.in_place());
  const std::size_t window = std::min(kStepsInFlight, steps.size());

  // In place, each step in flight sends from its own copy of the block
  // that its receive replaces.
  std::byte* copies = nullptr;
  std::size_t copy_stride = 0;
  if (blocks.in_place()) {
    for (const Step& step : steps) {
      copy_stride = std::max(copy_stride, blocks.outgoing_bytes(step.send_to));
    }
    copies = state.scratch_in.get(std::max<std::size_t>(1, window * copy_stride));
  } else if (const std::size_t own = blocks.incoming_bytes(r); own > 0) {
    std::memmove(blocks.incoming(r), blocks.outgoing(r), own);
  }

  // Every pair exchanges exactly one message each way, empty blocks too, so
  // that messages match one to one in every call.
  std::vector<PeerExchange::Handle> first(steps.size());
  auto post = [&](std::size_t i) {
    const Step& step = steps[i];
    const int index = static_cast<int>(i) + 1;
    const std::byte* source = blocks.outgoing(step.send_to);
    const std::size_t bytes = blocks.outgoing_bytes(step.send_to);
    if (copies != nullptr && bytes > 0) {
      std::byte* copy = copies + (i % window) * copy_stride;
      plain_copy(copy, source, bytes);
      source = copy;
    }
    first[i] = exchange.recv(blocks.incoming(step.recv_from), blocks.incoming_bytes(step.recv_from),
                             step.recv_from, "pairwise all_to_all: block from peer", index);
    exchange.send(source, bytes, step.send_to, "pairwise all_to_all: block to peer", index);
  };
  for (std::size_t i = 0; i < window; ++i) post(i);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    exchange.wait_range(first[i], first[i] + 2);
    if (i + window < steps.size()) post(i + window);
  }
}

}  // namespace

std::span<const CollectiveKind> PairwiseAlgorithm::serves() const {
  static constexpr std::array kServed = {CollectiveKind::kAllToAll, CollectiveKind::kAllToAllV};
  return kServed;
}

Support PairwiseAlgorithm::supports_served(const Request& request,
                                           const CommunicatorState& state) const {
  (void)state;
  if (request.memory == MemoryKind::kDevice) {
    return Support::no("pairwise serves host buffers only; device buffers need nccl");
  }
  return Support::yes();
}

void PairwiseAlgorithm::run(const Request& request, CommunicatorState& state) const {
  switch (request.kind) {
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllV: return run_pairwise(request, state);
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
    case CollectiveKind::kBarrier:
    case CollectiveKind::kAllGatherV:
    case CollectiveKind::kReduceScatterV:
    case CollectiveKind::kGather:
    case CollectiveKind::kGatherV:
    case CollectiveKind::kScatter:
    case CollectiveKind::kScatterV: refuse_unserved(request, state);
  }
}

// p-1 messages of one block each, kStepsInFlight steps at a time: the
// link's latency once per window of steps, every message's software cost
// (a local MPI message's) in turn, and the p-1 blocks spread over the
// peers at once. all_to_all_v's blocks differ by rank, and the choice must
// be the same on every rank: its estimate has the latency terms only
// (request.bytes() is 0 for it).
std::optional<double> PairwiseAlgorithm::estimate_seconds(const Request& request,
                                                          const Topology& topology) const {
  if (topology.size() < 1 ||
      (request.kind != CollectiveKind::kAllToAll && request.kind != CollectiveKind::kAllToAllV)) {
    return std::nullopt;
  }
  const Shape shape = shape_of(request, topology);
  const double messages = shape.ranks - 1.0;
  const double windows = std::ceil(messages / static_cast<double>(kStepsInFlight));
  return kCallSeconds + windows * message_latency_seconds(topology, shape) +
         messages * link_cost(LinkKind::kLocalMpi, topology).latency_seconds +
         spread_exchange_seconds(topology, shape, messages * shape.bytes);
}

}  // namespace collective::internal
