// Device names as tf.distribute writes them ("/cpu:0", "/device:CPU:1",
// "/job:worker/replica:0/task:2/device:CPU:0") parsed into kind and index.
#pragma once

#include <string>
#include <vector>

namespace collective::distribute::detail {

struct DeviceSpec {
  enum class Kind { kCpu, kGpu };
  Kind kind = Kind::kCpu;
  int index = 0;
};

// InvalidArgumentError naming operation and the text for a malformed name.
DeviceSpec parse_device(const std::string& name, const std::string& operation);

// Parses a strategy's device list: empty means {"/cpu:0"}; duplicates are an
// InvalidArgumentError; a GPU device is an UnsupportedError (host tensors).
std::vector<DeviceSpec> parse_replica_devices(const std::vector<std::string>& names,
                                              const std::string& operation);

// "/job:<job>/replica:0/task:<task>/device:CPU:<index>".
std::string full_device_name(const DeviceSpec& device, const std::string& job, int task);

}  // namespace collective::distribute::detail
