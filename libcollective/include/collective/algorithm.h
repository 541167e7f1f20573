// The algorithms a caller can name. kAuto lets the library choose.
#pragma once

#include "collective/export.h"

#include <optional>
#include <string_view>

namespace collective {

enum class Algorithm : int {
  kAuto = 0,
  kRing,               // bandwidth-optimal ring (reduce-scatter + all-gather)
  kRecursiveDoubling,  // log2(p) exchanges of the whole buffer; small messages
  kMpi,                // the MPI library's own collective (baseline)
  kSharedMemory,       // ranks of one node through a shared segment
  kHierarchical,       // shared memory inside nodes, ring across nodes
  kNccl,               // NVIDIA NCCL on device buffers
};
inline constexpr int kNumAlgorithms = 7;

// "auto", "ring", "recursive_doubling", "mpi", "shared_memory",
// "hierarchical", "nccl".
COLLECTIVE_API std::string_view to_string(Algorithm algorithm);
COLLECTIVE_API std::optional<Algorithm> parse_algorithm(std::string_view name);

// The collective operations, as named in errors, logs and the benchmark.
// Their properties (reduces? rooted? how counts and blocks relate, the
// in-place form, the MPI counterpart) are one table:
// collective/in_tree/collectives.h.
enum class CollectiveKind : int {
  kAllReduce = 0,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kBarrier,
  kAllToAll,
  kAllToAllV,
  kAllGatherV,
  kReduceScatterV,
  kGather,
  kGatherV,
  kScatter,
  kScatterV,
};
inline constexpr int kNumCollectiveKinds = 14;
COLLECTIVE_API std::string_view to_string(CollectiveKind kind);
COLLECTIVE_API std::optional<CollectiveKind> parse_collective_kind(std::string_view name);

}  // namespace collective
