#include "algorithms/hierarchical.h"

#include <array>
#include <optional>
#include <utility>
#include <vector>

#include "algorithms/node_phases.h"
#include "algorithms/ring.h"
#include "collective/errors.h"
#include "core/trace.h"
#include "cost/cost_model.h"
#include "kernels/float32_partials.h"
#include "kernels/reduce_kernels.h"
#include "transport/shm/node_segment.h"
#include "cross_rank_check/two_stage_check.h"

namespace collective::internal {

std::span<const CollectiveKind> HierarchicalAlgorithm::serves() const {
  static constexpr std::array kServed = {CollectiveKind::kAllReduce};
  return kServed;
}

Support HierarchicalAlgorithm::supports_served(const Request& request,
                                               const CommunicatorState& state) const {
  if (request.memory == MemoryKind::kDevice) {
    return Support::no("hierarchical serves host buffers only; device buffers need nccl");
  }
  if (!state.topology) return Support::no("hierarchical needs the communicator's topology");
  if (const std::string* unavailable = node_segment_unavailable(state)) {
    return Support::no(
        "hierarchical needs the node's shared-memory segment, which this communicator "
        "could not set up: " +
        *unavailable);
  }
  if (request.deterministic && state.topology->node_count() > 1) {
    // Each node's ranks are reduced first and the nodes' sums then
    // combined: the order over ranks follows the node layout.
    return Support::no(
        "hierarchical cannot be deterministic across nodes: it sums each node's "
        "ranks first, so the order over ranks depends on the node layout (use "
        "ring or recursive_doubling)");
  }
  return Support::yes();
}

namespace {

// The largest region reduced into scratch while the check is still open:
// beyond it the check is a round of its own, which costs one network
// latency against the milliseconds such a region takes to cross the
// network (at 12.5 GB/s, 16 MiB takes 1.3 ms), and no call keeps a
// scratch larger than this.
constexpr std::size_t kStagedRegionBytes = std::size_t{16} << 20;

// The rank of `local` on every node, by node: the ranks of the ring across
// nodes that local rank `local` runs (state.cross_node is split by node).
std::vector<int> ring_across_nodes(const Topology& topology, int local) {
  std::vector<int> ranks(static_cast<std::size_t>(topology.node_count()));
  for (int node = 0; node < topology.node_count(); ++node) {
    ranks[static_cast<std::size_t>(node)] =
        topology.node(node).ranks[static_cast<std::size_t>(local)];
  }
  return ranks;
}

}  // namespace

// Across nodes, once the node segment serves this call as it is: making
// it (or remaking it at full size for a larger call) is a step every rank
// of the communicator takes together, which a rank whose call differs
// would not take, so such a call checks first.
bool HierarchicalAlgorithm::carries_check(const Request& request, CommunicatorState& state) const {
  if (!state.topology || state.topology->node_count() < 2 || request.count == 0) return false;
  const auto owners = static_cast<std::size_t>(state.topology->min_ranks_per_node());
  return request.bytes() / owners < kStagedRegionBytes &&
         node_segment_serves_without_setup(request, state) && check_is_direct_exchange(state);
}

void HierarchicalAlgorithm::run(const Request& request, CommunicatorState& state) const {
  if (request.count == 0) return;
  const Topology& topology = *state.topology;
  const int owners = topology.min_ranks_per_node();
  const int local = topology.local_rank(state.rank);
  const int node = topology.node_of(state.rank);
  const bool owner = local < owners;
  // Across nodes the sums travel unscaled and MEAN divides once, by every
  // rank, at the end. On one node the node's reduction is the whole one: it
  // divides as it reduces, rounding 16-bit types once, in local-rank (=
  // rank) order, so the result is the deterministic one.
  const bool one_node = topology.node_count() == 1;
  const ReduceOp partial_op =
      request.op == ReduceOp::kMean && !one_node ? ReduceOp::kSum : request.op;

  // The check, when this call makes it: the node's ranks hear each other
  // first; an owner holds back its fingerprint to the next node's owner of
  // its region, for the ring's first message.
  std::optional<TwoStageCheck> check;
  if (request.carried_check != nullptr) {
    std::vector<int> ring = owner ? ring_across_nodes(topology, local) : std::vector<int>{};
    const int held_back = owner ? ring[static_cast<std::size_t>((node + 1) % topology.node_count())]
                                : CarriedData::kNoPeer;
    const TraceScope checking("cross-rank check");
    check.emplace(*request.carried_check, topology.node(node).ranks, held_back, std::move(ring),
                  request, state);
    if (!check->group_agrees()) {
      check->finish();  // raises: this node's ranks differ
      throw CommunicationError(request.label(), state.rank,
                               "cross-rank check: this node's ranks sent differing fingerprints, "
                               "yet the check of all of them agreed");
    }
  }

  NodeSegment& segment = NodeSegment::of(request, state);
  const std::size_t element = request.element_bytes();
  const RegionLayout layout(request.count, owners, element);
  // Across nodes, 16-bit SUM, MEAN and PROD keep the node's partial in
  // float32 and the ring across nodes reduces float32; the result is
  // divided (MEAN) and rounded once at the end.
  const bool float32_partials = !one_node && keeps_float32_partials(request.type, request.op);
  NodeWork work{request, segment, request.type, partial_op, one_node ? state.size : 1};
  work.float32_regions = float32_partials;
  std::byte* region =
      owner ? static_cast<std::byte*>(request.recv) + layout.offset(local) * element : nullptr;
  const std::size_t length = owner ? layout.length(local) : 0;
  // With the check open, nothing of the caller's is written: the node's
  // sum of this owner's region goes to scratch, and the ring reads it from
  // there (out of place) once the check agreed. float32 partials always go
  // to scratch, with room for the ring's float32 result beside them.
  std::byte* reduced = region;
  std::byte* summed = nullptr;
  if (float32_partials && length > 0) {
    reduced = state.scratch_work.get(2 * length * sizeof(float));
    summed = reduced + length * sizeof(float);
  } else if (check && length > 0) {
    reduced = state.scratch_work.get(length * element);
  }
  node_reduce_scatter(work, layout, request.send, reduced);

  bool reduced_across = false;
  if (owner && state.cross_node && length > 0) {
    reduced_across = true;
    Request across = request;
    across.send = reduced;
    across.recv = float32_partials ? summed : region;
    across.count = length;
    across.op = partial_op;
    if (float32_partials) {
      across.type = DataType::kFloat32;
      if (across.op == ReduceOp::kMean) across.op = ReduceOp::kSum;
    }
    across.check_relay = check ? &*check : nullptr;  // carried_check stays set with it
    // The ring: bandwidth-optimal across nodes.
    kRingAlgorithm.run(across, *state.cross_node);
  } else if (check) {
    check->finish();
  }
  if (float32_partials && reduced_across) {
    round_from_float32(region, reinterpret_cast<const float*>(summed), length, request.type,
                       request.op == ReduceOp::kMean ? state.size : 1);
  } else if (owner && request.op == ReduceOp::kMean && !one_node) {
    divide_buffer(region, length, request.type, state.size);
  }
  node_all_gather(work, layout, request.recv);
}

// The node reduce-scatter and all-gather: the traffic of shared_memory
// plus each owner's region copied once more (from its output into the
// result slots), in two passes that do not overlap, one hand-off a round
// each; across nodes, a ring of m nodes for each of the k regions, whose
// k owners share the node's NIC, so the node moves 2(m-1)/m of the buffer.
std::optional<double> HierarchicalAlgorithm::estimate_seconds(const Request& request,
                                                              const Topology& topology) const {
  if (topology.size() < 1 || request.kind != CollectiveKind::kAllReduce) return std::nullopt;
  const Shape shape = shape_of(request, topology);
  const double n = shape.bytes;
  const double local = shape.per_node;
  const double staged = n * (local - 1.0) / local;
  double seconds = kCallSeconds + 2.0 * handoff_seconds(shape) * slot_rounds(n) +
                   node_work_seconds(shape, n, staged + n + n / local, n);
  if (shape.nodes > 1) {
    const double m = shape.nodes;
    const LinkCost net = link_cost(LinkKind::kNetwork, topology);
    seconds += 2.0 * (m - 1.0) * (net.latency_seconds + n / m / net.bytes_per_second);
  }
  return seconds;
}

}  // namespace collective::internal
