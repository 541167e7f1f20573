// ReplicaContext: what code running inside Strategy::run sees of its
// replica (tf.distribute.ReplicaContext).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "collective/distribute/tensor.h"
#include "collective/distribute/values.h"
#include "collective/types.h"

namespace collective::distribute {

class Strategy;
class StrategyExtended;

namespace detail {

class ReplicaRun;

// A merge_call with its types erased, as it crosses between replica threads.
struct MergeRequest {
  const std::type_info* result_type = nullptr;
  const std::type_info* argument_type = nullptr;  // nullptr: no argument
  const void* argument = nullptr;                 // this replica's argument
  // Runs merge_fn once, given every local replica's argument in order.
  std::function<std::shared_ptr<const void>(Strategy&, const std::vector<const void*>&)> run;
  // A PerReplica result: how many values it holds (checked against the
  // local replicas before any replica takes its own); nullptr otherwise.
  std::size_t (*per_replica_size)(const void* result) = nullptr;
};

template <typename T>
struct IsPerReplica : std::false_type {};
template <typename T>
struct IsPerReplica<PerReplica<T>> : std::true_type {};

template <typename R>
void describe_result(MergeRequest& request) {
  request.result_type = &typeid(R);
  if constexpr (IsPerReplica<R>::value) {
    request.per_replica_size = [](const void* result) {
      return static_cast<const R*>(result)->num_replicas();
    };
  }
}

template <typename R>
auto merge_result(const std::shared_ptr<const void>& result, int local_replica) {
  if constexpr (std::is_void_v<R>) {
    return;
  } else if constexpr (IsPerReplica<R>::value) {
    // A PerReplica result is unpacked: each replica gets its own value.
    return static_cast<const R*>(result.get())->values()[static_cast<std::size_t>(local_replica)];
  } else {
    return R(*static_cast<const R*>(result.get()));
  }
}

}  // namespace detail

class ReplicaContext {
 public:
  // Internal: made by strategies (run == nullptr outside run(), and for the
  // default strategy's context outside any scope).
  ReplicaContext(Strategy& strategy, detail::ReplicaRun* run, int local_replica,
                 int replica_id_in_sync_group, int num_replicas_in_sync, std::string device);
  ReplicaContext(const ReplicaContext&) = delete;
  ReplicaContext& operator=(const ReplicaContext&) = delete;

  Strategy& strategy() const { return *strategy_; }
  // 0 .. num_replicas_in_sync-1 over all workers (worker-major).
  int replica_id_in_sync_group() const { return replica_id_in_sync_group_; }
  int num_replicas_in_sync() const { return num_replicas_in_sync_; }
  // 0 .. num_local_replicas-1 on this worker.
  int local_replica_id() const { return local_replica_; }
  // This replica's device, e.g. "/job:localhost/replica:0/task:0/device:CPU:1".
  const std::string& device() const { return device_; }

  // Reduces value across all replicas; every replica gets the result. Every
  // replica must call it, in the same order as its other collectives, with
  // the same op, dtype and shape (MismatchError otherwise).
  Tensor all_reduce(ReduceOp op, const Tensor& value);
  // Several values in one call; packed like CrossDeviceOps::batch_reduce.
  std::vector<Tensor> all_reduce(ReduceOp op, const std::vector<Tensor>& values);

  // Every replica's value concatenated along axis, in replica id order; the
  // lengths along axis may differ, as in Strategy::gather (same rules).
  Tensor all_gather(const Tensor& value, int axis);

  // Leaves the replica context: once every local replica has called
  // merge_call, merge_fn(strategy) runs once (local replica 0's merge_fn) in
  // the cross-replica context, and every replica gets its result (a
  // PerReplica result gives each replica its own value).
  template <typename Fn>
  auto merge_call(Fn&& merge_fn);

  // As above, and merge_fn(strategy, args) also receives every local
  // replica's value as one PerReplica<T>.
  template <typename Fn, typename T>
  auto merge_call(Fn&& merge_fn, const T& value);

 private:
  friend class StrategyExtended;  // attaches the context to each run()
  std::shared_ptr<const void> merge_call_erased(const detail::MergeRequest& request);
  // The all_reduce overloads' common path: the values are reduced in place.
  std::vector<Tensor> all_reduce_values(ReduceOp op, const std::vector<const Tensor*>& values);

  Strategy* strategy_;
  detail::ReplicaRun* run_;
  int local_replica_;
  int replica_id_in_sync_group_;
  int num_replicas_in_sync_;
  std::string device_;
};

template <typename Fn>
auto ReplicaContext::merge_call(Fn&& merge_fn) {
  using Result = std::remove_cvref_t<std::invoke_result_t<Fn&, Strategy&>>;
  detail::MergeRequest request;
  detail::describe_result<Result>(request);
  request.run = [&merge_fn](Strategy& strategy,
                            const std::vector<const void*>&) -> std::shared_ptr<const void> {
    if constexpr (std::is_void_v<Result>) {
      std::invoke(merge_fn, strategy);
      return nullptr;
    } else {
      return std::make_shared<const Result>(std::invoke(merge_fn, strategy));
    }
  };
  return detail::merge_result<Result>(merge_call_erased(request), local_replica_);
}

template <typename Fn, typename T>
auto ReplicaContext::merge_call(Fn&& merge_fn, const T& value) {
  using Result = std::remove_cvref_t<std::invoke_result_t<Fn&, Strategy&, const PerReplica<T>&>>;
  detail::MergeRequest request;
  detail::describe_result<Result>(request);
  request.argument_type = &typeid(T);
  request.argument = &value;
  request.run = [&merge_fn](
                    Strategy& strategy,
                    const std::vector<const void*>& arguments) -> std::shared_ptr<const void> {
    std::vector<T> values;
    values.reserve(arguments.size());
    for (const void* argument : arguments) values.push_back(*static_cast<const T*>(argument));
    const PerReplica<T> merged(std::move(values));
    if constexpr (std::is_void_v<Result>) {
      std::invoke(merge_fn, strategy, merged);
      return nullptr;
    } else {
      return std::make_shared<const Result>(std::invoke(merge_fn, strategy, merged));
    }
  };
  return detail::merge_result<Result>(merge_call_erased(request), local_replica_);
}

}  // namespace collective::distribute
