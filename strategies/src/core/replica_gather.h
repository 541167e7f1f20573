// Strategy.gather and ReplicaContext.all_gather: every replica's value of
// every worker concatenated along an axis, in global replica order. The
// replicas' lengths along the axis may differ (zero included); dtype, rank,
// axis and every other dimension must agree.
//
// Workers first all-gather a description of their replicas' values (one
// small all_gather; a second one only for values of rank above
// kInlineRank), and every worker checks all of them by the same rules, so
// a bad value on any worker raises the same error on every worker before
// any output is written. The values then move in one all_gather_v.
// Rules: docs/strategies.md, "Gathering values of different lengths".
#pragma once

#include <chrono>
#include <span>
#include <string>

#include "collective/algorithm.h"
#include "collective/distribute/tensor.h"

namespace collective::distribute::detail {

class WorkerCalls;

struct GatherSetting {
  int num_local_replicas = 1;
  int num_workers = 1;
  int worker_index = 0;
  WorkerCalls* worker_calls = nullptr;  // multi-worker only
  Algorithm algorithm = Algorithm::kAuto;
  std::chrono::milliseconds timeout{0};
};

// Dimensions carried in the first exchange; values of higher rank add a
// second exchange of their shapes.
inline constexpr int kInlineRank = 8;

// values[r] and axes[r]: local replica r's value and the axis it gathers
// along (negative counts from the end). values.size() must be
// num_local_replicas (checked on every worker, like the rest).
Tensor gather_replicas(const GatherSetting& setting, std::span<const Tensor* const> values,
                       std::span<const int> axes, const std::string& operation);

}  // namespace collective::distribute::detail
