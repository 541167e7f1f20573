#include "algorithms/hierarchical.h"

#include "algorithms/node_phases.h"
#include "cost/cost_model.h"
#include "transport/shm/node_segment.h"
#include "algorithms/registry.h"
#include "kernels/reduce_kernels.h"

namespace collective::internal {

Support HierarchicalAlgorithm::supports(const Request& request,
                                        const CommunicatorState& state) const {
  if (request.kind != CollectiveKind::kAllReduce) {
    return Support::no("hierarchical implements all_reduce only (use ring or mpi)");
  }
  if (request.memory == MemoryKind::kDevice) {
    return Support::no("hierarchical serves host buffers only; device buffers need nccl");
  }
  if (!state.topology) return Support::no("hierarchical needs the communicator's topology");
  if (const std::string* unavailable = node_segment_unavailable(state)) {
    return Support::no("hierarchical needs the node's shared-memory segment, which this communicator "
                       "could not set up: " + *unavailable);
  }
  if (request.deterministic && state.topology->node_count() > 1) {
    // Each node's ranks are reduced first and the nodes' sums then
    // combined: the order over ranks follows the node layout.
    return Support::no("hierarchical cannot be deterministic across nodes: it sums each node's "
                       "ranks first, so the order over ranks depends on the node layout (use "
                       "ring or recursive_doubling)");
  }
  return Support::yes();
}

void HierarchicalAlgorithm::run(const Request& request, CommunicatorState& state) const {
  if (request.count == 0) return;
  const Topology& topology = *state.topology;
  const int owners = topology.min_ranks_per_node();
  const int local = topology.local_rank(state.rank);
  // Across nodes the sums travel unscaled and MEAN divides once, by every
  // rank, at the end. On one node the node's reduction is the whole one: it
  // divides as it reduces, rounding 16-bit types once, in local-rank (=
  // rank) order, so the result is the deterministic one.
  const bool one_node = topology.node_count() == 1;
  const ReduceOp partial_op =
      request.op == ReduceOp::kMean && !one_node ? ReduceOp::kSum : request.op;

  NodeSegment& segment = NodeSegment::of(request, state);
  const RegionLayout layout(request.count, owners, request.element_bytes());
  const NodeWork work{request, segment, request.type, partial_op, one_node ? state.size : 1};
  node_reduce_scatter(work, layout, request.send, request.recv);

  if (local < owners) {
    auto* region = static_cast<std::byte*>(request.recv) + layout.offset(local) * request.element_bytes();
    const std::size_t length = layout.length(local);
    if (state.cross_node && length > 0) {
      Request across = request;
      across.send = region;
      across.recv = region;
      across.count = length;
      across.op = partial_op;
      across.carried_check = nullptr;  // checked before the node phase
      // The ring, asked of the registry: bandwidth-optimal across nodes.
      find_algorithm(Algorithm::kRing)->run(across, *state.cross_node);
    }
    if (request.op == ReduceOp::kMean && !one_node) {
      divide_buffer(region, length, request.type, state.size);
    }
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
