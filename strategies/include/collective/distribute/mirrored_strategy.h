// MirroredStrategy: synchronous training on several replicas of one process
// (tf.distribute.MirroredStrategy). Each replica is a thread; variables are
// mirrored (one copy per replica) and kept in sync by all-reduced updates.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collective/distribute/cross_device_ops.h"
#include "collective/distribute/strategy.h"

namespace collective::distribute {

class MirroredStrategy final : public Strategy {
 public:
  // devices: one replica per device, e.g. {"/cpu:0", "/cpu:1"}; empty means
  // {"/cpu:0"}. Duplicates and malformed names raise InvalidArgumentError;
  // GPU devices raise UnsupportedError (this build's tensors live in host
  // memory). cross_device_ops: how replicas' values are reduced; nullptr
  // chooses ReductionToOneDevice, tf.distribute's choice for CPU devices.
  explicit MirroredStrategy(std::vector<std::string> devices = {},
                            std::shared_ptr<CrossDeviceOps> cross_device_ops = nullptr);

  // K replicas on /cpu:0 .. /cpu:K-1 (K >= 1).
  static std::vector<std::string> cpu_devices(int num_replicas);
};

}  // namespace collective::distribute
