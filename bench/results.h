// What one measured row holds, whatever the output format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "collective/algorithm.h"
#include "collective/types.h"
#include "time_stats.h"

namespace collective::bench {

struct BaselineResult {
  TimeStats time;
  double algbw_gbs = 0;
  double busbw_gbs = 0;
  double speedup = 0;       // baseline median time / our median time
  std::uint64_t wrong = 0;  // summed over ranks
};

// One placement (out-of-place or in-place) of one row.
struct PlacementResult {
  bool measured = false;  // false: the form does not exist (broadcast out-of-place)
  bool in_place = false;
  Algorithm algorithm = Algorithm::kAuto;  // what ran (Communicator::last_algorithm)
  TimeStats time;
  double algbw_gbs = 0;
  double busbw_gbs = 0;
  bool checked = false;
  std::uint64_t wrong = 0;  // summed over ranks
  std::optional<BaselineResult> baseline;
};

// One size of one collective, type, op and requested algorithm.
struct SizeRow {
  CollectiveKind collective = CollectiveKind::kAllReduce;
  std::size_t bytes = 0;  // as nccl-tests counts them (whole buffer)
  std::size_t count = 0;  // the call's count argument
  std::size_t element_bytes = 0;
  DataType type = DataType::kFloat32;
  std::optional<ReduceOp> op;  // none for all_gather and broadcast
  int root = -1;               // -1 for collectives without a root
  Algorithm requested = Algorithm::kAuto;
  PlacementResult out_of_place;
  PlacementResult in_place;
};

// --fusion: N tensors of one size through the strategies layer, reduced
// one by one and with one batch_reduce.
struct FusionRow {
  std::size_t tensor_bytes = 0;
  std::size_t count = 0;  // elements per tensor
  std::size_t tensors = 0;
  std::size_t bytes_per_pack = 0;  // CommunicationOptions::bytes_per_pack (0: one pack)
  std::size_t packs = 0;           // cross-worker all-reduces per batch_reduce
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  Algorithm requested = Algorithm::kAuto;  // auto or ring: CommunicationImplementation
  // What the library ran (Communicator::last_algorithm), for the last
  // tensor and the last pack; none when no cross-worker call ran (one rank:
  // the strategies layer calls no collective).
  std::optional<Algorithm> separate_algorithm;
  std::optional<Algorithm> fused_algorithm;
  TimeStats separate;
  TimeStats fused;
  double algbw_gbs = 0;  // fused, over all tensors' bytes
  double busbw_gbs = 0;
  double speedup = 0;  // separate median / fused median
  bool checked = false;
  std::uint64_t wrong = 0;
};

// "ring", or "none" for an algorithm that did not run.
inline std::string algorithm_name(const std::optional<Algorithm>& algorithm) {
  return algorithm ? std::string(to_string(*algorithm)) : std::string("none");
}

// Our speed-up over the MPI baseline (its p50 / ours) over a set of rows:
// the median, and the worst with where it was measured.
struct SpeedupSummary {
  std::size_t measured = 0;  // placements with a baseline and a speed-up
  double median = 0;
  double worst = 0;
  // Where the worst speed-up was measured (the first such, in run order).
  CollectiveKind worst_collective = CollectiveKind::kAllReduce;
  DataType worst_type = DataType::kFloat32;
  std::optional<ReduceOp> worst_op;
  std::size_t worst_bytes = 0;
  bool worst_in_place = false;
  Algorithm worst_algorithm = Algorithm::kAuto;  // what ran
};

struct RunSummary {
  std::uint64_t wrong = 0;  // ours and baseline, all rows
  std::size_t measured = 0;
  double avg_busbw_gbs = 0;
  std::optional<double> avg_baseline_busbw_gbs;
  std::optional<SpeedupSummary> auto_speedup;    // rows of -a auto
  std::optional<SpeedupSummary> forced_speedup;  // rows of forced algorithms
  std::optional<double> min_busbw_gbs;           // --min-busbw
  bool busbw_ok = true;
  std::optional<std::string> rules_file;
  std::size_t rules_written = 0;
};

}  // namespace collective::bench
