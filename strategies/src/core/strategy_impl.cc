#include "core/strategy_impl.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "collective/errors.h"
#include "base/call_purpose.h"
#include "core/context_stack.h"
#include "core/replica_gather.h"
#include "values/element_math.h"
#include "reduce/worker_calls.h"

namespace collective::distribute::detail {
namespace {

std::atomic<std::uint64_t> g_next_serial{1};

}  // namespace

std::string StrategyImpl::label() const { return name + " #" + std::to_string(serial); }

void StrategyImpl::finish_setup() {
  serial = g_next_serial.fetch_add(1);
  if (num_local_replicas > 1) threads = std::make_unique<ReplicaThreads>(num_local_replicas);
  if (!cross_device_ops) cross_device_ops = std::make_shared<ReductionToOneDevice>();
  if (timeout.count() <= 0) timeout = effective_timeout(communication_options);
}

void validate_per_replica(const StrategyImpl& impl, const PerReplica<Tensor>& value,
                          const std::string& operation, std::size_t value_index) {
  const std::string which = "value " + std::to_string(value_index);
  if (value.num_replicas() != static_cast<std::size_t>(impl.num_local_replicas)) {
    throw InvalidArgumentError(operation, impl.error_rank(),
                               which + " has " + std::to_string(value.num_replicas()) +
                                   " per-replica values but " + impl.label() + " has " +
                                   std::to_string(impl.num_local_replicas) + " local replicas");
  }
  const Tensor& first = value[0];
  for (std::size_t r = 1; r < value.num_replicas(); ++r) {
    if (value[r].dtype() != first.dtype() || value[r].shape() != first.shape()) {
      throw InvalidArgumentError(operation, impl.error_rank(),
                                 which + ": local replica " + std::to_string(r) + " holds " +
                                     value[r].debug_string() + " but replica 0 holds " +
                                     first.debug_string());
    }
  }
}

int normalize_axis(int axis, int rank, const std::string& operation, int error_rank) {
  const int normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank) {
    throw InvalidArgumentError(operation, error_rank,
                               "axis " + std::to_string(axis) + " is out of range for rank " +
                                   std::to_string(rank) + " values");
  }
  return normalized;
}

std::vector<Tensor> StrategyImpl::batch_reduce(ReduceOp op,
                                               const std::vector<PerReplica<Tensor>>& values) {
  std::vector<std::vector<const Tensor*>> views(values.size());
  for (std::size_t v = 0; v < values.size(); ++v) {
    for (const Tensor& replica_value : values[v].values()) views[v].push_back(&replica_value);
  }
  return batch_reduce_views(op, views);
}

Tensor StrategyImpl::reduce_one(ReduceOp op, const PerReplica<Tensor>& value) {
  std::vector<std::vector<const Tensor*>> views(1);
  for (const Tensor& replica_value : value.values()) views[0].push_back(&replica_value);
  return std::move(batch_reduce_views(op, views).front());
}

std::vector<Tensor> StrategyImpl::batch_reduce_views(
    ReduceOp op, const std::vector<std::vector<const Tensor*>>& values) {
  // Messages are built only for an error: this is every step's path.
  const auto operation = [this] { return label() + " batch_reduce"; };
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::vector<const Tensor*>& value = values[i];
    const auto which = [i] { return "value " + std::to_string(i); };
    if (value.size() != static_cast<std::size_t>(num_local_replicas)) {
      throw InvalidArgumentError(operation(), error_rank(),
                                 which() + " has " + std::to_string(value.size()) +
                                     " per-replica values but " + label() + " has " +
                                     std::to_string(num_local_replicas) + " local replicas");
    }
    for (std::size_t r = 1; r < value.size(); ++r) {
      if (value[r]->dtype() != value[0]->dtype() || value[r]->shape() != value[0]->shape()) {
        throw InvalidArgumentError(operation(), error_rank(),
                                   which() + ": local replica " + std::to_string(r) + " holds " +
                                       value[r]->debug_string() + " but replica 0 holds " +
                                       value[0]->debug_string());
      }
    }
  }
  return cross_device_ops->batch_reduce_views(op, values);
}

bool StrategyImpl::any_worker(bool local, const std::string& operation) {
  if (num_workers == 1) return local;
  std::int32_t flag = local ? 1 : 0;
  AllReduceOptions options;
  options.op = ReduceOp::kMax;
  options.algorithm = host_algorithm_for(communication_options.implementation, operation);
  options.timeout = timeout;
  options.memory = MemoryKind::kHost;
  const CallPurpose purpose("whether any worker has input left");
  try {
    worker_calls->session().all_reduce(&flag, &flag, 1, DataType::kInt32, options);
  } catch (const MismatchError&) {
    throw;  // names both sides already
  } catch (const Error& error) {
    throw CommunicationError(
        operation, error_rank(),
        "workers could not agree whether input remains: " + std::string(error.what()));
  }
  return flag != 0;
}

Tensor StrategyImpl::broadcast_from_chief(const Tensor& value, const std::string& what,
                                          const std::string& operation) {
  if (num_workers == 1) return value;
  // Agree on dtype and shape before the bytes move: the maximum of each
  // field and of its negation gives every worker the extremes, so all of
  // them see a disagreement and raise together (no worker is left waiting).
  std::uint64_t shape_hash = 1469598103934665603ull;  // FNV-1a over the dims
  for (std::int64_t d : value.shape()) {
    shape_hash = (shape_hash ^ static_cast<std::uint64_t>(d)) * 1099511628211ull;
  }
  const std::int64_t fields[3] = {static_cast<std::int64_t>(value.dtype()), value.rank(),
                                  static_cast<std::int64_t>(shape_hash >> 1)};
  std::int64_t extremes[6];
  for (int i = 0; i < 3; ++i) {
    extremes[i] = fields[i];
    extremes[i + 3] = -fields[i];
  }
  WorkerCalls::Session calls = worker_calls->session();
  AllReduceOptions check;
  check.op = ReduceOp::kMax;
  check.algorithm = host_algorithm_for(communication_options.implementation, operation);
  check.timeout = timeout;
  check.memory = MemoryKind::kHost;
  calls.all_reduce(extremes, extremes, 6, DataType::kInt64, check);
  for (int i = 0; i < 3; ++i) {
    if (extremes[i] != -extremes[i + 3]) {
      throw MismatchError(operation, error_rank(),
                          what + " is " + value.debug_string() +
                              " on this worker, but the workers disagree on its dtype or shape; "
                              "every worker must create the same variables in the same order");
    }
  }
  Tensor result = value;
  if (result.num_bytes() == 0) return result;
  BroadcastOptions options;
  options.root = 0;
  options.algorithm = check.algorithm;
  options.timeout = timeout;
  options.memory = MemoryKind::kHost;
  calls.broadcast(result.raw_data(), result.num_bytes(), DataType::kUInt8, options);
  return result;
}

Tensor StrategyImpl::gather(const PerReplica<Tensor>& value, int axis,
                            const std::string& operation) {
  std::vector<const Tensor*> views;
  views.reserve(value.num_replicas());
  for (const Tensor& replica_value : value.values()) views.push_back(&replica_value);
  const std::vector<int> axes(views.size(), axis);
  return gather_views(views, axes, operation);
}

Tensor StrategyImpl::gather_views(std::span<const Tensor* const> values, std::span<const int> axes,
                                  const std::string& operation) {
  // Without cross-worker calls (one worker, or ParameterServerStrategy,
  // whose workers never wait for each other) the gather stays on this
  // worker, as its reductions do.
  const bool across_workers = num_workers > 1 && worker_calls != nullptr;
  GatherSetting setting;
  setting.num_local_replicas = num_local_replicas;
  setting.num_workers = across_workers ? num_workers : 1;
  setting.worker_index = across_workers ? worker_index : 0;
  setting.worker_calls = worker_calls.get();
  setting.algorithm = across_workers
                          ? host_algorithm_for(communication_options.implementation, operation)
                          : Algorithm::kAuto;
  setting.timeout = timeout;
  return gather_replicas(setting, values, axes, operation);
}

void StrategyImpl::require_cross_replica(const std::string& operation) const {
  const ContextFrame* frame = current_frame();
  if (frame != nullptr && frame->replica != nullptr) {
    throw InvalidArgumentError(operation, error_rank(),
                               "called in a replica context (inside run()); it needs the "
                               "cross-replica context: call it outside run(), or from a "
                               "ReplicaContext::merge_call function");
  }
}

Tensor StrategyImpl::reduce_to(ReduceOp op, const PerReplica<Tensor>& value) {
  require_cross_replica(label() + " reduce_to");
  const CallPurpose purpose("StrategyExtended.reduce_to");
  return reduce_one(op, value);
}

}  // namespace collective::distribute::detail
