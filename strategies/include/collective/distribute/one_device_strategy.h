// OneDeviceStrategy: everything on one device (tf.distribute.OneDeviceStrategy).
// Unlike the default strategy it runs the full machinery (scope, replica
// context, distributed input) with a single replica, which makes it a test
// bed for code meant for the multi-replica strategies.
#pragma once

#include <string>

#include "collective/distribute/strategy.h"

namespace collective::distribute {

class OneDeviceStrategy final : public Strategy {
 public:
  // device: "/cpu:N" (also "/device:CPU:N" or a full
  // "/job:.../device:CPU:N" name). GPU devices raise UnsupportedError: this
  // build's tensors live in host memory.
  explicit OneDeviceStrategy(const std::string& device = "/cpu:0");
};

}  // namespace collective::distribute
