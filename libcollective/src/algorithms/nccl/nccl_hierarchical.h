// The hierarchical all_reduce for GPU clusters (docs/gpu.md, "Hierarchical
// variant"): NCCL inside each node, MPI between nodes.
//
//   1. reduce-scatter inside the node (NCCL): local rank l of L ends with
//      the node's reduction of block l (count / L elements); the last
//      count % L elements (the tail) are all-reduced inside the node;
//   2. block l and the tail are copied to pinned host memory and
//      all-reduced across nodes among the ranks with local rank l (the
//      library's ring over MPI, one rank per node);
//   3. copied back, and the blocks all-gathered inside the node (NCCL).
//
// Bytes over the inter-node network: 2 (N-1)/N of count / L per rank
// instead of the whole buffer, and only host memory crosses MPI (this Open
// MPI is not CUDA-aware). MEAN reduces as SUM and divides the host shard by
// the number of ranks, in the library's MEAN arithmetic.
//
// The header needs no CUDA: the steps are an interface, so the orchestration
// is tested on host memory where there is no GPU.
#pragma once

#include <cstddef>
#include <string>

#include "algorithms/nccl/nccl_node_layout.h"
#include "core/request.h"

namespace collective::internal {

// Where each rank's pieces lie, in elements.
struct HierarchicalShape {
  std::size_t block = 0;         // count / local_size: the block each local rank owns
  std::size_t block_offset = 0;  // local_rank * block
  std::size_t tail = 0;          // count % local_size: all-reduced whole inside the node
  std::size_t tail_offset = 0;   // local_size * block
};
HierarchicalShape hierarchical_shape(std::size_t count, int local_size, int local_rank);

// The steps the orchestration needs. "Local" steps run inside the node on
// the call's (device) buffers and may be asynchronous until wait();
// cross_all_reduce runs between nodes on host memory and is synchronous.
class HierarchicalSteps {
 public:
  virtual ~HierarchicalSteps() = default;
  // recv == send + local_rank * recv_count is the in-place form.
  virtual void local_reduce_scatter(const void* send, void* recv, std::size_t recv_count,
                                    ReduceOp op) = 0;
  virtual void local_all_reduce(const void* send, void* recv, std::size_t count, ReduceOp op) = 0;
  // In place: the rank's block is already at recv + local_rank * block.
  virtual void local_all_gather_in_place(void* recv, std::size_t block) = 0;
  virtual void copy_to_host(void* host, const void* local, std::size_t bytes) = 0;
  virtual void copy_from_host(void* local, const void* host, std::size_t bytes) = 0;
  // Returns when every local step issued so far has finished.
  virtual void wait(const char* what) = 0;
  // Host memory for the shard that crosses nodes.
  virtual std::byte* staging(std::size_t bytes) = 0;
  // `type` is the call's, or float32 for the float32 copy of a 16-bit
  // shard (SUM, MEAN, PROD keep float32 partials across nodes).
  virtual void cross_all_reduce(void* host, std::size_t count, DataType type, ReduceOp op) = 0;
};

void run_hierarchical_all_reduce(const Request& request, const NodeLayout& layout,
                                 HierarchicalSteps& steps);

// When the NCCL algorithm takes the hierarchical variant (the rule in
// docs/gpu.md), with the reason for the debug log.
struct NcclPlan {
  bool hierarchical = false;
  std::string reason;
};
// COLLECTIVE_NCCL_HIERARCHICAL: "auto" (default: the rule) or "off".
enum class HierarchicalMode { kAuto, kOff };
HierarchicalMode hierarchical_mode();
NcclPlan choose_nccl_plan(CollectiveKind kind, const NodeLayout& layout, HierarchicalMode mode);

}  // namespace collective::internal
