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
  // and runs one cross-worker all-reduce per pack. 0 (the default): the
  // measured rule under which packing is never slower than single
  // all-reduces, tensors of up to 4 KiB in packs of up to 64 KiB and larger
  // ones alone (CollectiveAllReduce::kDefaultBytesPerPack); where
  // tf.distribute's 0 means one pack, ask for it with SIZE_MAX.
  std::size_t bytes_per_pack = 0;

  // Longest wait for other replicas or workers, in seconds. Unset: the
  // library default (COLLECTIVE_TIMEOUT, 300 s). Must be positive when set.
  std::optional<double> timeout_seconds;
};

// The libcollective algorithm a host-memory all-reduce uses under this
// implementation (kNccl -> kRing, see above).
Algorithm host_algorithm_for(CommunicationImplementation implementation);

// timeout_seconds as a duration; the process default when unset.
std::chrono::milliseconds effective_timeout(const CommunicationOptions& options);

}  // namespace collective::distribute
