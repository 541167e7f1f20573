#include "algorithms/shared_memory.h"

#include "algorithms/node_phases.h"
#include "algorithms/node_segment.h"
#include "core/env_params.h"

namespace collective::internal {

Support SharedMemoryAlgorithm::supports(const Request& request,
                                        const CommunicatorState& state) const {
  if (request.kind != CollectiveKind::kAllReduce) {
    return Support::no("shared_memory implements all_reduce only (use ring or mpi)");
  }
  if (request.memory == MemoryKind::kDevice) {
    return Support::no("shared_memory serves host buffers only; device buffers need nccl");
  }
  if (!state.topology) return Support::no("shared_memory needs the communicator's topology");
  if (state.topology->node_count() != 1) {
    return Support::no("shared_memory needs every rank on one node; these ranks span " +
                       std::to_string(state.topology->node_count()) +
                       " nodes (use hierarchical)");
  }
  return Support::yes();
}

void SharedMemoryAlgorithm::run(const Request& request, CommunicatorState& state) const {
  if (request.count == 0) return;
  NodeSegment& segment = NodeSegment::of(request, state);
  const NodeWork work{request, segment, request.type, request.op, state.size};
  node_all_reduce(work, request.send, request.recv, request.count,
                  request.bytes() <= env_params().shm_small_bytes);
}

}  // namespace collective::internal
