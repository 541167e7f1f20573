#include "collective/distribute/multi_worker_mirrored_strategy.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "collective/distribute/cluster_resolver.h"
#include "collective/distribute/cross_device_ops.h"
#include "collective/errors.h"
#include "base/device.h"
#include "base/log.h"
#include "core/strategy_impl.h"
#include "reduce/worker_calls.h"
#include "reduce/worker_calls_access.h"

namespace collective::distribute {
namespace {

std::string worker_list(const std::vector<int>& workers) {
  std::string text;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    text += (i > 0 ? ", " : "") + std::to_string(workers[i]);
  }
  return text;
}

// Elastic training (CommunicationOptions::elastic; docs/strategies.md): when
// the strategy's calls shrink to the surviving workers (worker_calls.h), the
// strategy renumbers its workers and replicas and says what happened.
void make_elastic(detail::StrategyImpl& impl, const std::vector<detail::DeviceSpec>& devices) {
  impl.elastic_state = std::make_unique<detail::StrategyImpl::ElasticState>();
  detail::StrategyImpl* const strategy = &impl;  // the calls live no longer than it
  impl.worker_calls->make_elastic([strategy, devices](
                                      Communicator& survivors, const std::vector<int>& lost,
                                      std::uint64_t step,
                                      std::optional<detail::WorkerCalls::Decision> decision) {
    detail::StrategyImpl& self = *strategy;
    const int workers_before = self.num_workers;
    const int was = self.worker_index;
    const int replicas_before = self.num_replicas_in_sync();
    self.num_workers = survivors.size();
    self.worker_index = survivors.rank();
    self.worker_devices.clear();
    for (const detail::DeviceSpec& device : devices) {
      self.worker_devices.push_back(detail::full_device_name(device, "worker", self.worker_index));
    }
    self.parameter_devices = self.worker_devices;
    ++self.elastic_state->membership;
    std::string what;
    using Decision = detail::WorkerCalls::Decision;
    // The strategy's run() count: the step in progress, or the last one.
    const std::string step_text = "the step of run() #" + std::to_string(step);
    if (!decision) {
      what = "another worker died while the survivors recovered: recovering on the rest";
    } else if (*decision == Decision::kRedoStep) {
      what = "redoing " + step_text +
             " from the values its variables had when it began, on its global batch cut over "
             "the survivors";
    } else if (*decision == Decision::kStepStands) {
      what = step_text + " had completed on every survivor and stands";
    } else if (*decision == Decision::kCompletedFromPeer) {
      what = "the cross-worker call after " + step_text +
             " that this worker lost was completed from a survivor's result";
    } else {
      what = "the cross-worker call after " + step_text + " is made again on the survivors";
    }
    // Its task id is the worker's new index (a collective on the survivors,
    // made by each of them here).
    if (decision && self.cluster_resolver) *self.cluster_resolver = MPIClusterResolver(survivors);
    DISTRIBUTE_LOG(kWarn, self.label()
                              << ": lost worker(s) " << worker_list(lost) << " of "
                              << workers_before << " (elastic training); " << self.num_workers
                              << " workers go on, num_replicas_in_sync " << replicas_before
                              << " -> " << self.num_replicas_in_sync() << "; this worker was "
                              << was << " and is now worker " << self.worker_index << "; " << what);
  });
}

std::unique_ptr<StrategyExtended> make_multi_worker(const CommunicationOptions& options,
                                                    const std::vector<std::string>& names,
                                                    std::optional<Communicator> given) {
  const char* kName = "MultiWorkerMirroredStrategy";
  if (options.timeout_seconds &&
      !(std::isfinite(*options.timeout_seconds) && *options.timeout_seconds > 0)) {
    throw InvalidArgumentError(kName, -1,
                               "CommunicationOptions::timeout_seconds must be positive, got " +
                                   std::to_string(*options.timeout_seconds));
  }
  // kNccl (or a value outside the enum) raises here, on every rank, before
  // any communication.
  (void)host_algorithm_for(options.implementation, kName);
  const auto devices = detail::parse_replica_devices(names, kName);
  // A private communicator, so the strategy's traffic never meets the
  // caller's: world() is already a private duplicate; a given one is split.
  Communicator communicator = given ? given->split(0, given->rank()) : Communicator::world();

  auto impl = std::make_unique<detail::StrategyImpl>();
  impl->name = kName;
  impl->mirrored_variables = true;
  impl->broadcast_initial_values = true;
  impl->num_local_replicas = static_cast<int>(devices.size());
  impl->num_workers = communicator.size();
  impl->worker_index = communicator.rank();
  impl->communication_options = options;

  // Every worker must run the same number of replicas: the mean divides by
  // workers x local replicas, and replica ids assume it.
  std::int64_t extremes[2] = {impl->num_local_replicas, -impl->num_local_replicas};
  AllReduceOptions max_options;
  max_options.op = ReduceOp::kMax;
  max_options.memory = MemoryKind::kHost;
  max_options.timeout = effective_timeout(options);
  communicator.all_reduce(extremes, extremes, 2, DataType::kInt64, max_options);
  if (extremes[0] != -extremes[1]) {
    throw MismatchError(kName, impl->worker_index,
                        "workers run different numbers of local replicas (between " +
                            std::to_string(-extremes[1]) + " and " + std::to_string(extremes[0]) +
                            "; this worker " + std::to_string(impl->num_local_replicas) +
                            "); every worker must list the same number of local devices");
  }

  for (const detail::DeviceSpec& device : devices) {
    impl->worker_devices.push_back(detail::full_device_name(device, "worker", impl->worker_index));
  }
  impl->parameter_devices = impl->worker_devices;
  impl->cluster_resolver = std::make_unique<MPIClusterResolver>(communicator);
  auto ops = std::make_shared<CollectiveAllReduce>(communicator, options,
                                                   std::make_unique<ReductionToOneDevice>(),
                                                   std::make_shared<std::mutex>());
  impl->worker_calls = detail::WorkerCallsAccess::of(*ops);
  impl->cross_device_ops = std::move(ops);
  if (options.elastic) make_elastic(*impl, devices);
  impl->finish_setup();
  // The communicator is the strategy's own: only its tagged calls use it.
  impl->worker_calls->adopt(impl->label());
  if (collective::log_level() >= collective::LogLevel::kInfo) {
    std::string list;
    for (const std::string& device : impl->worker_devices)
      list += (list.empty() ? "" : ", ") + device;
    DISTRIBUTE_LOG(kInfo, "Using MultiWorkerMirroredStrategy: worker "
                              << impl->worker_index << " of " << impl->num_workers
                              << ", local devices (" << list << "), communication "
                              << to_string(options.implementation) << ", bytes_per_pack "
                              << options.bytes_per_pack);
  }
  return std::make_unique<StrategyExtended>(std::move(impl));
}

CommunicationOptions options_with(CollectiveCommunication communication) {
  CommunicationOptions options;
  options.implementation = communication;
  return options;
}

}  // namespace

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(CommunicationOptions communication_options,
                                                         std::vector<std::string> local_devices,
                                                         std::optional<Communicator> communicator)
    : Strategy(make_multi_worker(communication_options, local_devices, std::move(communicator))) {}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(CollectiveCommunication communication,
                                                         std::vector<std::string> local_devices,
                                                         std::optional<Communicator> communicator)
    : MultiWorkerMirroredStrategy(options_with(communication), std::move(local_devices),
                                  std::move(communicator)) {}

}  // namespace collective::distribute
