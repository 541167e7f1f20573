#include "base/device.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "collective/errors.h"

namespace collective::distribute::detail {

DeviceSpec parse_device(const std::string& name, const std::string& operation) {
  std::string text(name);
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::size_t device_at = text.rfind("device:");
  if (device_at != std::string::npos) {
    text = text.substr(device_at + 7);
  } else if (!text.empty() && text.front() == '/') {
    text = text.substr(1);
  }
  DeviceSpec spec;
  std::string_view rest;
  if (text.rfind("cpu:", 0) == 0) {
    spec.kind = DeviceSpec::Kind::kCpu;
    rest = std::string_view(text).substr(4);
  } else if (text.rfind("gpu:", 0) == 0) {
    spec.kind = DeviceSpec::Kind::kGpu;
    rest = std::string_view(text).substr(4);
  } else {
    throw InvalidArgumentError(operation, 0,
                               "device \"" + name +
                                   "\" is not a device name (expected \"/cpu:N\", "
                                   "\"/device:CPU:N\" or \"/job:.../device:CPU:N\")");
  }
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), spec.index);
  if (error != std::errc() || end != rest.data() + rest.size() || rest.empty() || spec.index < 0) {
    throw InvalidArgumentError(operation, 0,
                               "device \"" + name + "\" has no valid non-negative index");
  }
  return spec;
}

std::vector<DeviceSpec> parse_replica_devices(const std::vector<std::string>& names,
                                              const std::string& operation) {
  std::vector<std::string> effective = names;
  if (effective.empty()) effective.push_back("/cpu:0");
  std::vector<DeviceSpec> devices;
  for (const std::string& name : effective) {
    const DeviceSpec spec = parse_device(name, operation);
    if (spec.kind == DeviceSpec::Kind::kGpu) {
      throw UnsupportedError(operation, 0,
                             "device \"" + name +
                                 "\" is a GPU, but the strategies layer keeps tensors in host "
                                 "memory and runs replicas on CPU threads only; use \"/cpu:N\" "
                                 "devices (one replica thread each)");
    }
    for (const DeviceSpec& seen : devices) {
      if (seen.kind == spec.kind && seen.index == spec.index) {
        throw InvalidArgumentError(operation, 0, "device \"" + name + "\" is listed twice");
      }
    }
    devices.push_back(spec);
  }
  return devices;
}

std::string full_device_name(const DeviceSpec& device, const std::string& job, int task) {
  return "/job:" + job + "/replica:0/task:" + std::to_string(task) +
         "/device:" + (device.kind == DeviceSpec::Kind::kCpu ? "CPU:" : "GPU:") +
         std::to_string(device.index);
}

}  // namespace collective::distribute::detail
