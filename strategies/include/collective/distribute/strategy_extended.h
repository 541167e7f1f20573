// StrategyExtended: the distribution-aware API behind Strategy
// (tf.distribute.StrategyExtended): devices, worker layout, the cross-device
// ops, reduce_to / batch_reduce_to and update for library code such as
// optimizers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
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
struct VariableState;
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
  // Elastic training (CommunicationOptions::elastic): how many steps were
  // redone on the survivors after a worker was lost. 0 elsewhere.
  int elastic_steps_redone() const;
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

  // tf.distribute's update(var, fn, args): fn(copy, args...) for every local
  // copy, where a Mirrored or PerReplica argument passes the component of
  // that copy (it must have one value per copy) and anything else is passed
  // as is. Returns nothing when fn returns void, else one result per copy.
  // Parameter-server variables (no local copies) raise UnsupportedError.
  template <typename Fn, typename... Args>
  requires(sizeof...(Args) > 0) auto update(Variable& variable, Fn&& fn, const Args&... args);

  // One copy of value per local replica, on the replicas' devices
  // (tf.distribute's broadcast_to to the strategy's devices).
  Mirrored<Tensor> broadcast_to(const Tensor& value) const;
  // One copy of value per local copy of destinations (a variable of this
  // strategy: InvalidArgumentError otherwise).
  Mirrored<Tensor> broadcast_to(const Tensor& value, const Variable& destinations) const;

  // Whether variable was created under this strategy's scope.
  bool variable_created_in_scope(const Variable& variable) const;

  // The distributed variable a value belongs to. This layer hands out
  // Variable handles, never per-replica components, so it is variable itself.
  Variable value_container(const Variable& variable) const;

  // tf.distribute's colocate_vars_with: while the returned scope lives,
  // variables created under this strategy are placed with variable (which
  // must be this strategy's: InvalidArgumentError otherwise). Under
  // ParameterServerStrategy every shard of a new variable goes to the ps
  // holding variable's first shard. The other strategies keep every
  // variable on parameter_devices() already, so nothing else changes.
  // Scopes end in reverse order of creation.
  class [[nodiscard]] ColocationScope {
   public:
    ColocationScope(StrategyExtended& extended, const Variable& variable);
    ~ColocationScope();
    ColocationScope(const ColocationScope&) = delete;
    ColocationScope& operator=(const ColocationScope&) = delete;

   private:
    detail::StrategyImpl& impl_;
    std::shared_ptr<const detail::VariableState> previous_;
  };
  ColocationScope colocate_vars_with(const Variable& variable) {
    return ColocationScope(*this, variable);
  }

  // Runs fn(local_replica) once per local replica, each in its replica
  // context (replica threads when there are several). Strategy::run is the
  // typed front end.
  void call_for_each_replica(const std::function<void(int local_replica)>& fn);

  // Checks used by Strategy::run on its arguments (InvalidArgumentError).
  void check_distributed_argument(int index, std::size_t num_values) const;
  void check_variable_argument(int index, const Variable& variable) const;

  // Internal: runs fn(copy, copy index) on every local copy (cross-replica
  // context, variable of this strategy), checking dtype and shape after.
  void update_copies(Variable& variable,
                     const std::function<void(Tensor& copy, std::size_t index)>& fn,
                     std::size_t num_per_copy_values);

  // Internal: the implementation shared by every strategy kind.
  detail::StrategyImpl& impl() const { return *impl_; }
  // Internal: shared ownership of it, for what may outlive the strategy
  // (distributed datasets and their iterators).
  const std::shared_ptr<detail::StrategyImpl>& shared_impl() const { return impl_; }
  explicit StrategyExtended(std::unique_ptr<detail::StrategyImpl> impl);

 private:
  static std::shared_ptr<const detail::VariableState> shared_state(const Variable& variable);

  std::shared_ptr<detail::StrategyImpl> impl_;
};

namespace detail {
// The value fn receives for copy `index`: a distributed value's component,
// anything else as is.
template <typename A>
const auto& update_argument(const A& argument, std::size_t index) {
  if constexpr (is_distributed_values_v<A>) {
    return argument.values()[index];
  } else {
    return argument;
  }
}
template <typename A>
std::size_t per_copy_count(const A& argument) {
  if constexpr (is_distributed_values_v<A>) {
    return argument.num_replicas();
  } else {
    return 0;
  }
}
}  // namespace detail

template <typename Fn, typename... Args>
requires(sizeof...(Args) > 0) auto StrategyExtended::update(Variable& variable, Fn&& fn,
                                                            const Args&... args) {
  // The number of components of the distributed arguments (0: none); all
  // must agree with the copies (checked in update_copies).
  std::size_t per_copy = 0;
  bool mixed = false;
  for (std::size_t count : {detail::per_copy_count(args)...}) {
    if (count == 0) continue;
    if (per_copy != 0 && count != per_copy) mixed = true;
    per_copy = count;
  }
  if (mixed) per_copy = static_cast<std::size_t>(-1);
  using Result = std::remove_cvref_t<
      std::invoke_result_t<Fn&, Tensor&, decltype(detail::update_argument(args, 0))...>>;
  if constexpr (std::is_void_v<Result>) {
    update_copies(
        variable,
        [&](Tensor& copy, std::size_t index) {
          std::invoke(fn, copy, detail::update_argument(args, index)...);
        },
        per_copy);
  } else {
    std::vector<std::optional<Result>> results;
    update_copies(
        variable,
        [&](Tensor& copy, std::size_t index) {
          if (results.size() <= index) results.resize(index + 1);
          results[index].emplace(std::invoke(fn, copy, detail::update_argument(args, index)...));
        },
        per_copy);
    std::vector<Result> values;
    for (std::optional<Result>& result : results) values.push_back(std::move(*result));
    return Mirrored<Result>(std::move(values));
  }
}

}  // namespace collective::distribute
