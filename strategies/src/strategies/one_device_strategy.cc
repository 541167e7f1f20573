#include "collective/distribute/one_device_strategy.h"

#include "base/device.h"
#include "base/log.h"
#include "core/strategy_impl.h"

namespace collective::distribute {
namespace {

std::unique_ptr<StrategyExtended> make_one_device(const std::string& device) {
  const auto devices = detail::parse_replica_devices({device}, "OneDeviceStrategy");
  auto impl = std::make_unique<detail::StrategyImpl>();
  impl->name = "OneDeviceStrategy";
  impl->worker_devices = {detail::full_device_name(devices.front(), "localhost", 0)};
  impl->parameter_devices = impl->worker_devices;
  impl->finish_setup();
  DISTRIBUTE_LOG(kInfo, "Using OneDeviceStrategy with device " << impl->worker_devices.front());
  return std::make_unique<StrategyExtended>(std::move(impl));
}

}  // namespace

OneDeviceStrategy::OneDeviceStrategy(const std::string& device)
    : Strategy(make_one_device(device)) {}

}  // namespace collective::distribute
