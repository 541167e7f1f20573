// Every tunable of the library: one named environment variable each, read
// once per process, with the default documented in docs/parameters.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

#include "collective/algorithm.h"

namespace collective::internal {

struct EnvParams {
  // COLLECTIVE_TIMEOUT (seconds, fractional allowed): default per-call timeout.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // COLLECTIVE_ALGORITHM: replaces Algorithm::kAuto in every call's options.
  std::optional<Algorithm> forced_algorithm;
  // COLLECTIVE_RING_SEGMENT_BYTES: unit of pipelining in the ring.
  std::size_t ring_segment_bytes = 512 * 1024;
  // COLLECTIVE_RING_PIPELINE_DEPTH: receive segments in flight per ring.
  int ring_pipeline_depth = 4;
  // COLLECTIVE_SMALL_MESSAGE_BYTES: up to this size all_reduce prefers
  // recursive doubling over the ring when no cost model is available.
  std::size_t small_message_bytes = 64 * 1024;
  // COLLECTIVE_MAX_MESSAGE_BYTES: largest single MPI message; bigger
  // transfers are split (MPI counts are int).
  std::size_t max_message_bytes = std::size_t{1} << 30;
};

// Parsed on first use; a malformed value raises InvalidArgumentError that
// names the variable.
const EnvParams& env_params();

}  // namespace collective::internal
