// How a multi-replica strategy communicates (tf.distribute's
// experimental.CommunicationOptions and CommunicationImplementation).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>

#include "collective/algorithm.h"

namespace collective::distribute {

// The cross-worker collective implementation.
//   kAuto  libcollective chooses per call (Algorithm::kAuto)
//   kRing  the ring all-reduce (Algorithm::kRing)
//   kNccl  NCCL (Algorithm::kNccl) for tensors in GPU memory. Tensors in host
//          memory use the ring instead, with a log line, as tf.distribute
//          documents for CommunicationImplementation.NCCL.
enum class CommunicationImplementation : int { kAuto = 0, kRing, kNccl };

std::string_view to_string(CommunicationImplementation implementation);

struct CommunicationOptions {
  CommunicationImplementation implementation = CommunicationImplementation::kAuto;

  // batch_reduce packs consecutive tensors of one dtype into buffers of at
  // most this many bytes (a tensor larger than this is a pack of its own),
  // and runs one cross-worker all-reduce per pack. 0 (the default) packs
  // every tensor of one dtype into a single buffer, as tf.distribute does.
  std::size_t bytes_per_pack = 0;

  // Longest wait for other replicas or workers, in seconds. Unset: the
  // library default (COLLECTIVE_TIMEOUT, 300 s). Must be positive when set.
  std::optional<double> timeout_seconds;

  // Bitwise-reproducible reductions: every element is reduced over all
  // replicas of all workers in global replica order (worker-major), so a
  // run gives the same bits whatever the layout of the same replica count
  // (4 workers x 1 replica, 2 x 2, 1 x 4). Cross-worker all-reduces run
  // with AllReduceOptions::deterministic; with several local replicas per
  // worker the replicas' values are all-gathered and reduced in that order
  // on every worker, K x the bytes of the usual local-sum-then-all-reduce
  // (docs/strategies.md).
  bool deterministic = false;
};

// The libcollective algorithm a host-memory all-reduce uses under this
// implementation (kNccl -> kRing, see above).
Algorithm host_algorithm_for(CommunicationImplementation implementation);

// timeout_seconds as a duration; the process default when unset.
std::chrono::milliseconds effective_timeout(const CommunicationOptions& options);

}  // namespace collective::distribute
