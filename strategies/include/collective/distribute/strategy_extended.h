// StrategyExtended: the distribution-aware API behind Strategy
// (tf.distribute.StrategyExtended): devices, worker layout, the cross-device
// ops, reduce_to / batch_reduce_to and update for library code such as
// optimizers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collective/distribute/communication_options.h"
#include "collective/distribute/tensor.h"
#include "collective/distribute/values.h"
#include "collective/types.h"

namespace collective::distribute {

class CrossDeviceOps;
class Strategy;
class Variable;

namespace detail {
struct StrategyImpl;
}  // namespace detail

class StrategyExtended {
 public:
  ~StrategyExtended();
  StrategyExtended(const StrategyExtended&) = delete;
  StrategyExtended& operator=(const StrategyExtended&) = delete;

  // Replicas' devices on this worker, e.g.
  // "/job:localhost/replica:0/task:0/device:CPU:1" or, for multi-worker,
  // "/job:worker/replica:0/task:3/device:CPU:0".
  const std::vector<std::string>& worker_devices() const;
  // Where variables live: the same devices (mirrored variables), or the one
  // device of OneDeviceStrategy.
  const std::vector<std::string>& parameter_devices() const;

  int num_local_replicas() const;
  int num_replicas_in_sync() const;
  int num_workers() const;
  int worker_index() const;
  // Whether this worker should save checkpoints / write summaries (the
  // chief, worker 0, in multi-worker training; always true otherwise).
  bool should_checkpoint() const;
  bool should_save_summary() const;

  const CommunicationOptions& communication_options() const;
  CrossDeviceOps& cross_device_ops();

  // Reduce distributed values in the cross-replica context (local replicas
  // first, then across workers).
  Tensor reduce_to(ReduceOp op, const PerReplica<Tensor>& value);
  std::vector<Tensor> batch_reduce_to(ReduceOp op, const std::vector<PerReplica<Tensor>>& values);

  // Applies fn to every local copy of variable (cross-replica context; inside
  // run() reach it through ReplicaContext::merge_call). The same fn with the
  // same inputs keeps mirrored copies identical.
  void update(Variable& variable, const std::function<void(Tensor& copy)>& fn);

  // Runs fn(local_replica) once per local replica, each in its replica
  // context (replica threads when there are several). Strategy::run is the
  // typed front end.
  void call_for_each_replica(const std::function<void(int local_replica)>& fn);

  // Checks used by Strategy::run on its arguments (InvalidArgumentError).
  void check_distributed_argument(int index, std::size_t num_values) const;
  void check_variable_argument(int index, const Variable& variable) const;

  // Internal: the implementation shared by every strategy kind.
  detail::StrategyImpl& impl() const { return *impl_; }
  explicit StrategyExtended(std::unique_ptr<detail::StrategyImpl> impl);

 private:
  std::unique_ptr<detail::StrategyImpl> impl_;
};

}  // namespace collective::distribute
