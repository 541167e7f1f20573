#include "collective/distribute/mirrored_strategy.h"

#include "collective/errors.h"
#include "base/device.h"
#include "base/log.h"
#include "core/strategy_impl.h"

namespace collective::distribute {
namespace {

std::unique_ptr<StrategyExtended> make_mirrored(const std::vector<std::string>& names,
                                                std::shared_ptr<CrossDeviceOps> cross_device_ops) {
  const auto devices = detail::parse_replica_devices(names, "MirroredStrategy");
  auto impl = std::make_unique<detail::StrategyImpl>();
  impl->name = "MirroredStrategy";
  impl->mirrored_variables = true;
  impl->num_local_replicas = static_cast<int>(devices.size());
  for (const detail::DeviceSpec& device : devices) {
    impl->worker_devices.push_back(detail::full_device_name(device, "localhost", 0));
  }
  impl->parameter_devices = impl->worker_devices;
  // tf.distribute picks ReductionToOneDevice when the devices are CPUs.
  impl->cross_device_ops =
      cross_device_ops ? std::move(cross_device_ops) : std::make_shared<ReductionToOneDevice>();
  impl->finish_setup();
  if (collective::log_level() >= collective::LogLevel::kInfo) {
    std::string list;
    for (const std::string& device : impl->worker_devices)
      list += (list.empty() ? "" : ", ") + device;
    DISTRIBUTE_LOG(kInfo, "Using MirroredStrategy with devices ("
                              << list << "), cross-device ops " << impl->cross_device_ops->name());
  }
  return std::make_unique<StrategyExtended>(std::move(impl));
}

}  // namespace

MirroredStrategy::MirroredStrategy(std::vector<std::string> devices,
                                   std::shared_ptr<CrossDeviceOps> cross_device_ops)
    : Strategy(make_mirrored(devices, std::move(cross_device_ops))) {}

std::vector<std::string> MirroredStrategy::cpu_devices(int num_replicas) {
  if (num_replicas < 1) {
    throw InvalidArgumentError("MirroredStrategy::cpu_devices", 0,
                               "need at least one replica, got " + std::to_string(num_replicas));
  }
  std::vector<std::string> devices;
  for (int i = 0; i < num_replicas; ++i) devices.push_back("/cpu:" + std::to_string(i));
  return devices;
}

}  // namespace collective::distribute
