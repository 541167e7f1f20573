#include "collective/distribute/central_storage_strategy.h"

#include "base/device.h"
#include "base/log.h"
#include "core/strategy_impl.h"

namespace collective::distribute {
namespace {

std::unique_ptr<StrategyExtended> make_central_storage(const std::vector<std::string>& names,
                                                       const std::string& parameter_device) {
  const auto devices = detail::parse_replica_devices(names, "CentralStorageStrategy");
  auto impl = std::make_unique<detail::StrategyImpl>();
  impl->name = "CentralStorageStrategy";
  // One copy per variable: the difference from MirroredStrategy. Replicas
  // read copy 0; updates go through merge_call/update, which reduce the
  // replicas' values first and apply the result to the one copy.
  impl->mirrored_variables = false;
  impl->num_local_replicas = static_cast<int>(devices.size());
  for (const detail::DeviceSpec& device : devices) {
    impl->worker_devices.push_back(detail::full_device_name(device, "localhost", 0));
  }
  if (parameter_device.empty()) {
    impl->parameter_devices = {impl->worker_devices.front()};
  } else {
    const auto parameter =
        detail::parse_replica_devices({parameter_device}, "CentralStorageStrategy");
    impl->parameter_devices = {detail::full_device_name(parameter.front(), "localhost", 0)};
  }
  impl->cross_device_ops = std::make_shared<ReductionToOneDevice>();
  impl->finish_setup();
  DISTRIBUTE_LOG(kInfo, "Using CentralStorageStrategy with " << impl->num_local_replicas
                                                             << " compute replicas, variables on "
                                                             << impl->parameter_devices.front());
  return std::make_unique<StrategyExtended>(std::move(impl));
}

}  // namespace

CentralStorageStrategy::CentralStorageStrategy(std::vector<std::string> compute_devices,
                                               std::string parameter_device)
    : Strategy(make_central_storage(compute_devices, parameter_device)) {}

}  // namespace collective::distribute
