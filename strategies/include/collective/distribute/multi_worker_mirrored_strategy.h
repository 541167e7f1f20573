// MultiWorkerMirroredStrategy: synchronous training across workers
// (tf.distribute.MultiWorkerMirroredStrategy). One worker per MPI rank of
// the communicator, each with the same number of local replicas (threads).
// Reductions run locally first (in-process, one buffer per pack), then one
// cross-worker all-reduce per pack through libcollective.
//
// Construction is collective: every rank of the communicator must construct
// the strategy, with the same number of local devices (MismatchError
// otherwise). MPI must be initialized (collective::Environment).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collective/communicator.h"
#include "collective/distribute/communication_options.h"
#include "collective/distribute/strategy.h"

namespace collective::distribute {

class MultiWorkerMirroredStrategy final : public Strategy {
 public:
  // communication_options: cross-worker implementation, packing, timeout
  //   (timeout_seconds must be positive when set; implementation kNccl
  //   raises UnsupportedError: the layer's tensors are host memory).
  // local_devices: this worker's replicas, e.g. {"/cpu:0", "/cpu:1"}; empty
  //   means {"/cpu:0"}.
  // communicator: the workers; std::nullopt means Communicator::world(). The
  //   strategy splits a private copy, so its traffic never meets the caller's.
  explicit MultiWorkerMirroredStrategy(CommunicationOptions communication_options = {},
                                       std::vector<std::string> local_devices = {},
                                       std::optional<Communicator> communicator = std::nullopt);
  // The guide's form, MultiWorkerMirroredStrategy(CollectiveCommunication.RING):
  // CommunicationOptions with only the implementation set. kNccl raises
  // UnsupportedError (communication_options.h).
  explicit MultiWorkerMirroredStrategy(CollectiveCommunication communication,
                                       std::vector<std::string> local_devices = {},
                                       std::optional<Communicator> communicator = std::nullopt);
};

}  // namespace collective::distribute
