#include "algorithms/hierarchical.h"

#include "algorithms/node_phases.h"
#include "algorithms/node_segment.h"
#include "algorithms/ring.h"
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
  if (state.node_segment_unavailable) {
    return Support::no("hierarchical needs the node's shared-memory segment, which this communicator "
                       "could not set up: " + *state.node_segment_unavailable);
  }
  return Support::yes();
}

void HierarchicalAlgorithm::run(const Request& request, CommunicatorState& state) const {
  if (request.count == 0) return;
  const Topology& topology = *state.topology;
  const int owners = topology.min_ranks_per_node();
  const int local = topology.local_rank(state.rank);
  // The sums travel unscaled; MEAN divides once, by every rank, at the end.
  const ReduceOp partial_op = request.op == ReduceOp::kMean ? ReduceOp::kSum : request.op;

  NodeSegment& segment = NodeSegment::of(request, state);
  const RegionLayout layout(request.count, owners, request.element_bytes());
  const NodeWork work{request, segment, request.type, partial_op, 1};
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
      RingAlgorithm().run(across, *state.cross_node);
    }
    if (request.op == ReduceOp::kMean) divide_buffer(region, length, request.type, state.size);
  }
  node_all_gather(work, layout, request.recv);
}

}  // namespace collective::internal
