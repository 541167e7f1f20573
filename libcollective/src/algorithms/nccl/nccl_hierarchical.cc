#include "algorithms/nccl/nccl_hierarchical.h"

#include <cstdlib>
#include <string_view>

#include "collective/errors.h"
#include "core/env_params.h"
#include "core/log.h"
#include "kernels/float32_partials.h"
#include "kernels/reduce_kernels.h"

namespace collective::internal {

HierarchicalShape hierarchical_shape(std::size_t count, int local_size, int local_rank) {
  const auto l = static_cast<std::size_t>(local_size);
  HierarchicalShape shape;
  shape.block = count / l;
  shape.block_offset = static_cast<std::size_t>(local_rank) * shape.block;
  shape.tail = count % l;
  shape.tail_offset = l * shape.block;
  return shape;
}

void run_hierarchical_all_reduce(const Request& request, const NodeLayout& layout,
                                 HierarchicalSteps& steps) {
  const HierarchicalShape shape =
      hierarchical_shape(request.count, layout.local_size, layout.local_rank);
  const std::size_t element = request.element_bytes();
  const auto* send = static_cast<const std::byte*>(request.send);
  auto* recv = static_cast<std::byte*>(request.recv);
  const bool mean = request.op == ReduceOp::kMean;
  const ReduceOp op = mean ? ReduceOp::kSum : request.op;

  std::byte* own_block = recv + shape.block_offset * element;
  std::byte* tail = recv + shape.tail_offset * element;
  if (shape.block > 0) steps.local_reduce_scatter(send, own_block, shape.block, op);
  if (shape.tail > 0)
    steps.local_all_reduce(send + shape.tail_offset * element, tail, shape.tail, op);

  // The block and the tail travel between nodes as one host shard. A
  // 16-bit SUM, MEAN or PROD crosses nodes as a float32 copy (staged ahead
  // of the shard, aligned) and is divided (MEAN) and rounded once after:
  // the node's partial was NCCL's, the sums across nodes stay float32.
  const std::size_t block_bytes = shape.block * element;
  const std::size_t tail_bytes = shape.tail * element;
  const std::size_t shard = shape.block + shape.tail;
  const bool float32_partials = keeps_float32_partials(request.type, request.op);
  const std::size_t wide_bytes = float32_partials ? shard * sizeof(float) : 0;
  std::byte* staged = steps.staging(wide_bytes + block_bytes + tail_bytes);
  std::byte* host = staged + wide_bytes;
  if (block_bytes > 0) steps.copy_to_host(host, own_block, block_bytes);
  if (tail_bytes > 0) steps.copy_to_host(host + block_bytes, tail, tail_bytes);
  steps.wait("the reduce-scatter inside the node");

  if (float32_partials) {
    auto* wide = reinterpret_cast<float*>(staged);
    widen_to_float32(wide, host, shard, request.type);
    steps.cross_all_reduce(wide, shard, DataType::kFloat32, op);
    round_from_float32(host, wide, shard, request.type, mean ? layout.world_size : 1);
  } else {
    steps.cross_all_reduce(host, shard, request.type, op);
    if (mean) divide_buffer(host, shard, request.type, layout.world_size);
  }

  if (block_bytes > 0) steps.copy_from_host(own_block, host, block_bytes);
  if (tail_bytes > 0) steps.copy_from_host(tail, host + block_bytes, tail_bytes);
  if (shape.block > 0) steps.local_all_gather_in_place(recv, shape.block);
  steps.wait("the all-gather inside the node");
}

HierarchicalMode hierarchical_mode() {
  return env_params().nccl_hierarchical_off ? HierarchicalMode::kOff : HierarchicalMode::kAuto;
}

NcclPlan choose_nccl_plan(CollectiveKind kind, const NodeLayout& layout, HierarchicalMode mode) {
  auto flat = [](std::string why) { return NcclPlan{false, "flat: " + std::move(why)}; };
  if (kind != CollectiveKind::kAllReduce)
    return flat("the hierarchical variant is all_reduce only");
  if (mode == HierarchicalMode::kOff) return flat("COLLECTIVE_NCCL_HIERARCHICAL=off");
  if (layout.node_count == 1) return flat("one node");
  if (!layout.uniform()) {
    return flat("nodes hold different numbers of ranks (" + std::to_string(layout.min_local_size) +
                " to " + std::to_string(layout.max_local_size) + ")");
  }
  if (layout.local_size == 1) return flat("one rank per node: nothing to reduce inside a node");
  return NcclPlan{true, "hierarchical: " + std::to_string(layout.node_count) + " nodes x " +
                            std::to_string(layout.local_size) + " ranks"};
}

}  // namespace collective::internal
