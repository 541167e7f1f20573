#include "collective/distribute/replica_context.h"

#include "collective/errors.h"
#include "core/context_stack.h"
#include "core/replica_context.h"
#include "core/replica_run.h"
#include "core/strategy_access.h"
#include "core/strategy_impl.h"

namespace collective::distribute {

ReplicaContext::ReplicaContext(Strategy& strategy, detail::ReplicaRun* run, int local_replica,
                               int replica_id_in_sync_group, int num_replicas_in_sync,
                               std::string device)
    : strategy_(&strategy),
      run_(run),
      local_replica_(local_replica),
      replica_id_in_sync_group_(replica_id_in_sync_group),
      num_replicas_in_sync_(num_replicas_in_sync),
      device_(std::move(device)) {}

namespace {

// A replica context may only be used on its own replica's thread, inside
// its run() (the context of another replica, or one kept after run()
// returned, would join the wrong rendezvous).
void require_current(const ReplicaContext& context, const char* operation) {
  if (detail::current_replica_context() != &context) {
    const detail::StrategyImpl& impl = detail::impl_of(context.strategy());
    throw InvalidArgumentError(impl.label() + " " + operation, impl.error_rank(),
                               "this ReplicaContext (local replica " +
                                   std::to_string(context.local_replica_id()) +
                                   ") is not the current replica context of this thread; call "
                                   "get_replica_context() inside the replica function");
  }
}

}  // namespace

Tensor ReplicaContext::all_reduce(ReduceOp op, const Tensor& value) {
  return std::move(all_reduce_values(op, {&value}).front());
}

std::vector<Tensor> ReplicaContext::all_reduce(ReduceOp op, const std::vector<Tensor>& values) {
  std::vector<const Tensor*> pointers;
  pointers.reserve(values.size());
  for (const Tensor& value : values) pointers.push_back(&value);
  return all_reduce_values(op, pointers);
}

std::vector<Tensor> ReplicaContext::all_reduce_values(ReduceOp op,
                                                      const std::vector<const Tensor*>& values) {
  require_current(*this, "ReplicaContext.all_reduce");
  if (run_ == nullptr) {
    // The default strategy: one replica, so every reduction is the value
    // itself (validated the same way as on real replicas).
    std::vector<std::vector<const Tensor*>> views;
    views.reserve(values.size());
    for (const Tensor* value : values) views.push_back({value});
    return detail::impl_of(*strategy_).batch_reduce_views(op, views);
  }
  return run_->all_reduce(local_replica_, op, values);
}

Tensor ReplicaContext::all_gather(const Tensor& value, int axis) {
  require_current(*this, "ReplicaContext.all_gather");
  if (run_ == nullptr) {
    return detail::impl_of(*strategy_)
        .gather(PerReplica<Tensor>({value}), axis, "ReplicaContext.all_gather");
  }
  return run_->all_gather(local_replica_, value, axis);
}

std::shared_ptr<const void> ReplicaContext::merge_call_erased(const detail::MergeRequest& request) {
  require_current(*this, "ReplicaContext.merge_call");
  if (run_ == nullptr) {
    detail::FrameGuard merge_frame(detail::ContextFrame::Kind::kMerge, strategy_, nullptr);
    std::vector<const void*> arguments;
    if (request.argument_type != nullptr) arguments.push_back(request.argument);
    std::shared_ptr<const void> result = request.run(*strategy_, arguments);
    detail::check_merge_result(detail::impl_of(*strategy_), request, result.get());
    return result;
  }
  return run_->merge_call(local_replica_, request);
}

namespace detail {

void check_merge_result(const StrategyImpl& impl, const MergeRequest& request, const void* result) {
  if (request.per_replica_size == nullptr) return;
  const std::size_t size = request.per_replica_size(result);
  if (size != static_cast<std::size_t>(impl.num_local_replicas)) {
    throw InvalidArgumentError(impl.label() + " ReplicaContext.merge_call", impl.error_rank(),
                               "merge_fn returned a PerReplica of " + std::to_string(size) +
                                   " values, but there are " +
                                   std::to_string(impl.num_local_replicas) +
                                   " local replicas: a PerReplica result gives each local "
                                   "replica its own value, so it must hold exactly one per "
                                   "replica");
  }
}

}  // namespace detail

}  // namespace collective::distribute
