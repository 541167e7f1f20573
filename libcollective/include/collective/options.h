// One options struct per collective. Every field has a default; a
// default-constructed struct is always valid.
#pragma once

#include <chrono>
#include <cstdint>

#include "collective/algorithm.h"
#include "collective/types.h"

namespace collective {

// Where the buffers of a call live.
enum class MemoryKind : int {
  kAuto = 0,  // detect: device pointers when CUDA says so, else host
  kHost,
  kDevice,  // CUDA device memory (served by the NCCL algorithm)
};

// The longest timeout a call keeps (100 years): a longer one, such as
// std::chrono::milliseconds::max(), is cut to this and so means "never time
// out" in practice, instead of overflowing the clock.
inline constexpr std::chrono::milliseconds kLongestTimeout{3'153'600'000'000LL};

// Fields shared by every collective.
struct CommonOptions {
  // kAuto picks per call (docs/algorithms.md). A named algorithm that cannot
  // serve the call raises UnsupportedError; it never silently falls back.
  // The environment variable COLLECTIVE_ALGORITHM, when set, replaces kAuto.
  Algorithm algorithm = Algorithm::kAuto;

  // Maximum time the call may wait for its peers. Zero means the
  // communicator's default (COLLECTIVE_TIMEOUT seconds, 300 by default);
  // longer than kLongestTimeout means kLongestTimeout.
  std::chrono::milliseconds timeout{0};

  // Where the buffers live. kAuto detects it.
  MemoryKind memory = MemoryKind::kAuto;

  // The caller's own identity of this call (what it is for: "step 7's
  // gradient reduction"), compared by the cross-rank check like count and
  // op: ranks that pass different tags raise MismatchError, naming each
  // rank's tag. 0: the call carries none (it pairs only with calls that
  // carry none). Not compared when the check is off (COLLECTIVE_VALIDATE=0).
  std::uint64_t call_tag = 0;
};

struct AllReduceOptions : CommonOptions {
  ReduceOp op = ReduceOp::kSum;
  // Bitwise-reproducible result: every element is reduced over the ranks
  // in rank order, ((x0 op x1) op x2) ..., whatever algorithm, message size,
  // segment size or node layout serves the call (docs/algorithms.md#
  // deterministic-reductions). Algorithms that cannot keep that order refuse
  // the call when forced; AUTO picks among the others. The environment
  // variable COLLECTIVE_DETERMINISTIC=1 turns it on for every call.
  bool deterministic = false;
};

struct ReduceScatterOptions : CommonOptions {
  ReduceOp op = ReduceOp::kSum;
  // As AllReduceOptions::deterministic.
  bool deterministic = false;
};

struct AllGatherOptions : CommonOptions {};

struct BroadcastOptions : CommonOptions {
  int root = 0;
};

struct ReduceOptions : CommonOptions {
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  // As AllReduceOptions::deterministic.
  bool deterministic = false;
};

struct BarrierOptions : CommonOptions {};

// all_to_all and all_to_all_v.
struct AllToAllOptions : CommonOptions {};

// gather and gather_v.
struct GatherOptions : CommonOptions {
  int root = 0;
};

// scatter and scatter_v.
struct ScatterOptions : CommonOptions {
  int root = 0;
};

}  // namespace collective
