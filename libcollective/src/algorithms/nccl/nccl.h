// NVIDIA NCCL on CUDA device buffers (docs/gpu.md): all_reduce,
// reduce_scatter, all_gather, broadcast and reduce, every DataType
// (bfloat16 included) and ReduceOp (MEAN as ncclAvg). Serves device
// buffers only; host buffers are refused with a reason, so forcing nccl on
// them raises UnsupportedError.
//
// Across nodes whose ranks hold equal shares, all_reduce takes the
// hierarchical variant (nccl_hierarchical.h); everything else runs one NCCL
// collective over all ranks. Either way the call has finished on the
// device when it returns, and it never waits past its timeout: NCCL is
// aborted and TimeoutError raised instead.
//
// Numerics are NCCL's, not the host kernels': float16 and bfloat16 are
// reduced in their own precision at each step, ncclAvg on floating types
// sums pre-multiplied inputs, and MIN/MAX on floating types return the
// other operand when one is NaN (fminf/fmaxf).
#pragma once

#include "algorithms/collective_algorithm.h"

namespace collective::internal {

class NcclAlgorithm final : public CollectiveAlgorithm {
 public:
  Algorithm id() const override { return Algorithm::kNccl; }
  std::span<const CollectiveKind> serves() const override;
  Support supports_served(const Request& request, const CommunicatorState& state) const override;
  void run(const Request& request, CommunicatorState& state) const override;
};

}  // namespace collective::internal
