// CentralStorageStrategy: synchronous training on several replicas of one
// process with one copy of each variable
// (tf.distribute.experimental.CentralStorageStrategy). Compute is
// replicated across the local replicas (threads); every replica reads the
// single copy, and their updates are aggregated (ReductionToOneDevice's
// order) before being applied once to it. Results equal MirroredStrategy's
// on the same data and devices.
#pragma once

#include <string>
#include <vector>

#include "collective/distribute/strategy.h"

namespace collective::distribute {

class CentralStorageStrategy final : public Strategy {
 public:
  // compute_devices: one replica per device, e.g. {"/cpu:0", "/cpu:1"};
  // empty means {"/cpu:0"}. parameter_device holds the variables; empty
  // means the first compute device (TF's rule for one device; with CPUs
  // only, TF's default "/cpu:0" is the same). GPU devices raise
  // UnsupportedError (host tensors only).
  explicit CentralStorageStrategy(std::vector<std::string> compute_devices = {},
                                  std::string parameter_device = "");
};

}  // namespace collective::distribute
