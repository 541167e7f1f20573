// Strategy: a distribution policy over a set of replicas
// (tf.distribute.Strategy). Write the training step once; run it under
// OneDeviceStrategy, MirroredStrategy, MultiWorkerMirroredStrategy or the
// default strategy without changing it.
//
//   MirroredStrategy strategy({"/cpu:0", "/cpu:1"});
//   auto scope = strategy.scope();          // variables created now are mirrored
//   Variable w(Tensor(DataType::kFloat32, {4}));
//   PerReplica<Tensor> losses = strategy.run(step, batch);  // one call per replica
//   Tensor loss = strategy.reduce(ReduceOp::kSum, losses);
//
// Contexts. Code runs either in the cross-replica context (the caller's
// thread, inside scope() and outside run()) or in a replica context (inside
// run(); get_replica_context() returns that replica's ReplicaContext). The
// context is per thread, like tf.distribute's.
//
// Threads. A strategy with several local replicas runs them as threads; the
// function given to run() is invoked concurrently, once per replica, and
// arguments that are not distributed values are shared by all replicas
// (treat them as read-only). A strategy is used from one caller thread at a
// time and must outlive its scopes, variables' uses and distributed datasets.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "collective/distribute/input_context.h"
#include "collective/distribute/replica_context.h"
#include "collective/distribute/strategy_extended.h"
#include "collective/distribute/tensor.h"
#include "collective/distribute/values.h"
#include "collective/distribute/variable.h"
#include "collective/types.h"

namespace collective::distribute {

class ClusterResolver;
class Dataset;
class DistributedDataset;

class Strategy {
 public:
  virtual ~Strategy();
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  // RAII: while a Scope lives, this strategy is the current strategy of the
  // thread (get_strategy()) and variables created follow its policy.
  // Entering a different strategy's scope inside it raises
  // InvalidArgumentError ("mixing different strategies"); nesting the same
  // strategy's scope is fine. Scopes must end in reverse order of creation,
  // on the thread that created them.
  class [[nodiscard]] Scope {
   public:
    explicit Scope(Strategy& strategy);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    std::uint64_t frame_id_;
  };
  Scope scope() { return Scope(*this); }

  // "MirroredStrategy", "MultiWorkerMirroredStrategy", "OneDeviceStrategy",
  // "DefaultDistributionStrategy".
  std::string_view name() const;

  // Calls fn once per local replica, in a replica context. A PerReplica or
  // Mirrored argument passes each replica its own value; a Variable passes
  // itself (it must belong to this strategy); anything else is passed to
  // every replica as is. Returns the per-replica results (one value per
  // local replica), or nothing when fn returns void. With one local replica
  // (the default strategy, OneDeviceStrategy) the result converts to the
  // plain value, as tf.distribute returns it: `Tensor loss = s.run(f, x);`
  // (values.h). If a replica throws, the other replicas are released from
  // any collective they wait in and run() rethrows the first replica's
  // error (by replica id) after all replicas stopped.
  template <typename Fn, typename... Args>
  auto run(Fn&& fn, Args&&... args);

  // Reduces a per-replica value across all replicas of all workers. With an
  // axis, each replica's value is first reduced along that axis, so the
  // result is the reduction over the concatenation of all replicas' values
  // (kMean divides by the total count along the axis). Cross-replica
  // context only.
  Tensor reduce(ReduceOp op, const PerReplica<Tensor>& value,
                std::optional<int> axis = std::nullopt);
  // A value that is not distributed is the same on every replica: kMean,
  // kMin and kMax return it; kSum and kProd raise InvalidArgumentError when
  // there is more than one replica (as tf.distribute does).
  Tensor reduce(ReduceOp op, const Tensor& value, std::optional<int> axis = std::nullopt);

  // The values of this worker's replicas.
  template <typename T>
  std::vector<T> experimental_local_results(const DistributedValues<T>& value) const {
    return value.values();
  }
  std::vector<Tensor> experimental_local_results(const Variable& variable) const;
  std::vector<Tensor> experimental_local_results(const Tensor& value) const { return {value}; }

  // Concatenates every replica's value along axis, in replica id order
  // (all workers). The lengths along axis may differ (zero included); dtype,
  // rank, axis and the other dimensions must agree, else every worker raises
  // InvalidArgumentError or MismatchError naming the replicas and shapes.
  Tensor gather(const PerReplica<Tensor>& value, int axis);

  // Replicas over which gradients are aggregated: workers x local replicas.
  int num_replicas_in_sync() const;

  StrategyExtended& extended() { return *extended_; }
  const StrategyExtended& extended() const { return *extended_; }

  // The cluster of a multi-worker strategy; nullptr for single-worker ones.
  const ClusterResolver* cluster_resolver() const;

  // Splits each global batch of dataset across the replicas. The pipeline
  // must contain batch(global_batch_size); transformations after it
  // (prefetch, repeat, take, filter, map, shuffle of batches) are kept, as
  // tf.distribute rebatches. Across workers it shards as
  // options.auto_shard_policy says. See distributed_dataset.h.
  DistributedDataset experimental_distribute_dataset(const Dataset& dataset,
                                                     const InputOptions& options = {});

  // Calls fn once on this worker with its InputContext; the dataset it
  // returns must be batched per replica. Each step gives the worker's
  // replicas consecutive batches. No automatic splitting or sharding.
  // With options.experimental_replication_mode = kPerReplica, fn is called
  // once per local replica (see InputReplicationMode) and each step gives
  // every replica the next batch of its own dataset.
  DistributedDataset distribute_datasets_from_function(
      const std::function<Dataset(const InputContext&)>& fn, const InputOptions& options = {});

  // tf.distribute's experimental_distribute_values_from_function: fn is
  // called once per local replica, on the caller's thread, with that
  // replica's ValueContext; the results, one per local replica.
  template <typename Fn>
  auto experimental_distribute_values_from_function(Fn&& fn) {
    using Result = std::remove_cvref_t<std::invoke_result_t<Fn&, const ValueContext&>>;
    std::vector<Result> values;
    const int local = extended_->num_local_replicas();
    for (int r = 0; r < local; ++r) {
      const ValueContext context(extended_->worker_index() * local + r, num_replicas_in_sync());
      values.push_back(std::invoke(fn, context));
    }
    return PerReplica<Result>(std::move(values));
  }

 protected:
  explicit Strategy(std::unique_ptr<StrategyExtended> extended);

 private:
  std::unique_ptr<StrategyExtended> extended_;
};

// The current strategy of this thread: the innermost scope's, or inside
// run() the running one, else the default strategy.
Strategy& get_strategy();
// True when the current strategy is not the default strategy.
bool has_strategy();
// The current replica context: inside run(), that replica's; nullptr in a
// cross-replica context (inside a scope, or inside merge_call); outside any
// scope, the default strategy's replica context (replica 0 of 1).
ReplicaContext* get_replica_context();
// True inside a strategy's scope but not in a replica context.
bool in_cross_replica_context();

// tf.distribute.experimental_set_strategy: makes strategy the current
// strategy of this thread until the next call, as if its scope were entered
// and left open; nullptr returns to the default strategy. Must not be called
// inside a scope or run() (InvalidArgumentError). The strategy must outlive
// the setting.
void experimental_set_strategy(Strategy* strategy);

// tf.distribute.get_loss_reduction: how the optimizer combines replicas'
// gradients, hence how a per-replica loss must be scaled. Always
// ReduceOp::kSum here, as in TF 2 outside Estimator: SGD sums the
// gradients, so scale each replica's loss by the global batch size.
ReduceOp get_loss_reduction();

namespace detail {

// Elastic training (CommunicationOptions::elastic): once the workers
// shrank, a local replica's part of the batch a distributed iterator last
// handed out, cut anew over the survivors; nullptr otherwise. Raises when
// the batch is another one cut before the shrink.
std::vector<Tensor>* elastic_part(const std::vector<Tensor>& handed_out, int local_replica);

template <typename A>
decltype(auto) replica_argument(A& argument, int local_replica) {
  if constexpr (std::is_same_v<std::remove_cv_t<A>, PerReplica<std::vector<Tensor>>>) {
    auto& part = argument.values()[static_cast<std::size_t>(local_replica)];
    std::vector<Tensor>* cut_anew = elastic_part(part, local_replica);
    return (cut_anew != nullptr ? *cut_anew : part);
  } else if constexpr (is_distributed_values_v<A>) {
    return (argument.values()[static_cast<std::size_t>(local_replica)]);
  } else {
    return (argument);
  }
}

template <typename A>
void check_run_argument(const StrategyExtended& extended, const A& argument, int index) {
  if constexpr (is_distributed_values_v<A>) {
    extended.check_distributed_argument(index, argument.num_replicas());
  } else if constexpr (std::is_base_of_v<Variable, std::remove_cvref_t<A>>) {
    extended.check_variable_argument(index, argument);
  }
}

}  // namespace detail

template <typename Fn, typename... Args>
auto Strategy::run(Fn&& fn, Args&&... args) {
  using Result = std::remove_cvref_t<
      std::invoke_result_t<Fn&, decltype(detail::replica_argument(
                                    std::declval<std::remove_reference_t<Args>&>(), 0))...>>;
  int index = 0;
  (detail::check_run_argument(*extended_, args, index++), ...);
  if constexpr (std::is_void_v<Result>) {
    extended_->call_for_each_replica(
        [&]([[maybe_unused]] int replica) {  // unused when Args is empty
          std::invoke(fn, detail::replica_argument(args, replica)...);
        });
  } else {
    std::vector<std::optional<Result>> results(
        static_cast<std::size_t>(extended_->num_local_replicas()));
    extended_->call_for_each_replica([&](int replica) {
      results[static_cast<std::size_t>(replica)].emplace(
          std::invoke(fn, detail::replica_argument(args, replica)...));
    });
    std::vector<Result> values;
    values.reserve(results.size());
    for (std::optional<Result>& result : results) values.push_back(std::move(*result));
    return PerReplica<Result>(std::move(values));
  }
}

}  // namespace collective::distribute
