// How a multi-replica strategy communicates (tf.distribute's
// experimental.CommunicationOptions and CommunicationImplementation).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>

#include "collective/algorithm.h"
#include "collective/communicator.h"

namespace collective::distribute {

// The cross-worker collective implementation. There is one enum for this
// choice in the whole library: libcollective's CollectiveCommunication
// (communicator.h). tf.distribute's two names for it,
// experimental.CollectiveCommunication and CommunicationImplementation,
// are both that enum here.
//   kAuto  libcollective chooses per call (Algorithm::kAuto)
//   kRing  the ring all-reduce (Algorithm::kRing)
//   kNccl  NCCL (Algorithm::kNccl), which serves device buffers only. The
//          strategies layer's tensors are host memory (tensor.h), so a
//          strategy asked for kNccl raises UnsupportedError when it is
//          constructed, as Communicator does for a forced algorithm it
//          cannot serve: a forced choice that cannot be served raises, it
//          never falls back silently.
using collective::CollectiveCommunication;
using CommunicationImplementation = CollectiveCommunication;

// "AUTO", "RING", "NCCL".
std::string_view to_string(CollectiveCommunication implementation);

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

  // Bitwise-reproducible reductions: every element is reduced over all
  // replicas of all workers in global replica order (worker-major), so a
  // run gives the same bits whatever the layout of the same replica count
  // (4 workers x 1 replica, 2 x 2, 1 x 4). Cross-worker all-reduces run
  // with AllReduceOptions::deterministic; with several local replicas per
  // worker the replicas' values are all-gathered and reduced in that order
  // on every worker, K x the bytes of the usual local-sum-then-all-reduce
  // (docs/strategies.md).
  bool deterministic = false;

  // MultiWorkerMirroredStrategy keeps training when a worker dies
  // (libcollective's extension; docs/strategies.md, "Elastic training"):
  // the survivors shrink the strategy's communicator, agree on where each
  // stood, redo the step that failed from the weights it started with, with
  // each global batch cut over the remaining workers, and go on; a log line
  // says what happened. Needs `mpirun --enable-recovery` (Open MPI), else
  // mpirun ends the job. Costs per step: a copy of the strategy's variables
  // when run() starts and one 8-byte all-reduce when it ends.
  bool elastic = false;
};

// The libcollective algorithm a host-memory collective uses under this
// implementation: kAuto -> Algorithm::kAuto, kRing -> Algorithm::kRing;
// kNccl raises UnsupportedError (NCCL serves no host memory), as does a
// value outside the enum (InvalidArgumentError). `operation` names the
// caller in the error.
Algorithm host_algorithm_for(CollectiveCommunication implementation,
                             std::string_view operation = "host_algorithm_for");

// timeout_seconds as a duration; the process default when unset.
std::chrono::milliseconds effective_timeout(const CommunicationOptions& options);

}  // namespace collective::distribute
