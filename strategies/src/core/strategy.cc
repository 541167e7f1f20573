#include "collective/distribute/strategy.h"

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>

#include "collective/distribute/cluster_resolver.h"
#include "collective/distribute/dataset.h"
#include "collective/distribute/distributed_dataset.h"
#include "collective/errors.h"
#include "core/context_stack.h"
#include "core/distributed_dataset.h"
#include "core/strategy_access.h"
#include "values/element_math.h"
#include "base/log.h"
#include "base/call_purpose.h"
#include "core/strategy_impl.h"
#include "reduce/worker_calls.h"

namespace collective::distribute {

using detail::ContextFrame;

namespace detail {
namespace {

// The strategy in effect when no other is: no distribution at all.
class DefaultStrategy final : public Strategy {
 public:
  DefaultStrategy() : Strategy(std::make_unique<StrategyExtended>(make_default_impl())) {}
};

}  // namespace

std::unique_ptr<StrategyImpl> make_default_impl() {
  auto impl = std::make_unique<StrategyImpl>();
  impl->name = "DefaultDistributionStrategy";
  impl->worker_devices = {"/job:localhost/replica:0/task:0/device:CPU:0"};
  impl->parameter_devices = impl->worker_devices;
  impl->finish_setup();
  return impl;
}

Strategy& default_strategy() {
  static DefaultStrategy strategy;
  return strategy;
}

ReplicaContext& default_replica_context() {
  static ReplicaContext context(default_strategy(), nullptr, 0, 0, 1,
                                default_strategy().extended().worker_devices().front());
  return context;
}

std::string describe_strategy(const Strategy& strategy) {
  return strategy.extended().impl().label();
}

StrategyImpl& impl_of(const Strategy& strategy) { return strategy.extended().impl(); }

std::shared_ptr<StrategyImpl> shared_impl_of(const Strategy& strategy) {
  return strategy.extended().shared_impl();
}

Strategy& current_strategy() { return get_strategy(); }

std::vector<Tensor>* elastic_part(const std::vector<Tensor>& handed_out, int local_replica) {
  const ContextFrame* frame = current_frame();
  if (frame == nullptr || frame->strategy == nullptr) return nullptr;
  StrategyImpl& impl = impl_of(*frame->strategy);
  if (!impl.elastic_state || !impl.elastic_state->recut_active) return nullptr;
  StrategyImpl::ElasticState& elastic = *impl.elastic_state;
  const std::size_t r = static_cast<std::size_t>(local_replica);
  const void* key = handed_out.empty() ? nullptr : handed_out.front().raw_data();
  if (r < elastic.part_keys.size() && r < elastic.recut.size() && elastic.part_keys[r] == key) {
    return &elastic.recut[r];
  }
  // Run on a batch cut for the workers before the shrink: its rows would be
  // those of another worker's part, a wrong result.
  throw UnsupportedError(impl.label() + " run", impl.error_rank(),
                         "the workers shrank (elastic training), and this run()'s batch is not "
                         "the last one a distributed iterator handed out, the only one that can "
                         "be cut anew over the survivors; take each step's batch with get_next() "
                         "right before its run()");
}

ReplicaContext* current_replica_context() { return get_replica_context(); }

}  // namespace detail

Strategy::Strategy(std::unique_ptr<StrategyExtended> extended) : extended_(std::move(extended)) {
  extended_->impl().strategy = this;
}

Strategy::~Strategy() {
  detail::StrategyImpl& impl = extended_->impl();
  if (impl.run_gate->running()) {
    const ContextFrame* frame = detail::current_frame();
    if (detail::inside_run_on_this_thread() && frame != nullptr && frame->strategy == this) {
      // Waiting here would wait for this very thread: a bug that cannot be
      // reported by an exception from a destructor.
      std::fprintf(stderr,
                   "collective::distribute: %s destroyed from inside its own run() (a replica "
                   "or merge_call function); aborting\n",
                   impl.label().c_str());
      std::abort();
    }
  }
  const std::string reason =
      impl.label() + " was destroyed while run() was in progress on another thread";
  impl.run_gate->close(impl.label() + " run", impl.error_rank(), reason,
                       impl.worker_calls ? &impl.worker_calls->communicator() : nullptr);
  // The implementation may outlive this object (a distributed iterator holds
  // it); its back pointer must not.
  impl.strategy = nullptr;
}

std::string_view Strategy::name() const { return extended_->impl().name; }

int Strategy::num_replicas_in_sync() const { return extended_->num_replicas_in_sync(); }

const ClusterResolver* Strategy::cluster_resolver() const {
  return extended_->impl().cluster_resolver.get();
}

Strategy::Scope::Scope(Strategy& strategy) {
  const ContextFrame* frame = detail::current_frame();
  if (frame != nullptr && frame->strategy != &strategy) {
    const detail::StrategyImpl& impl = strategy.extended().impl();
    throw InvalidArgumentError(
        impl.label() + " scope", impl.error_rank(),
        "mixing different strategies: entering the scope of " + impl.label() + " inside " +
            (frame->replica != nullptr ? "a replica context of " : "the scope of ") +
            detail::describe_strategy(*frame->strategy) + "; leave that scope first");
  }
  // A scope keeps the context it is entered in: inside run() it stays a
  // replica context.
  frame_id_ = detail::push_frame(ContextFrame::Kind::kScope, &strategy,
                                 frame != nullptr ? frame->replica : nullptr);
}

Strategy::Scope::~Scope() {
  if (!detail::pop_frame(frame_id_)) {
    // Destructors never throw: report and leave the stack as it is.
    DISTRIBUTE_LOG(kWarn,
                   "a Strategy scope ended out of order (scopes must end in reverse order "
                   "of creation, on the thread that created them); the scope stack of "
                   "this thread is now inconsistent");
  }
}

Tensor Strategy::reduce(ReduceOp op, const PerReplica<Tensor>& value, std::optional<int> axis) {
  detail::StrategyImpl& impl = extended_->impl();
  const std::string operation = impl.label() + " reduce";
  const detail::CallPurpose purpose("Strategy.reduce");
  const ContextFrame* frame = detail::current_frame();
  if (frame != nullptr && frame->replica != nullptr) {
    throw InvalidArgumentError(operation, impl.error_rank(),
                               "reduce() must be called in the cross-replica context, not inside "
                               "run(); inside run() use ReplicaContext::all_reduce");
  }
  if (value.num_replicas() > 0) {
    detail::require_op_applies(op, value[0].dtype(), operation, impl.error_rank());
  }
  if (!axis) {
    detail::validate_per_replica(impl, value, operation, 0);
    return impl.reduce_one(op, value);
  }
  // Reduce along the axis within each replica, then across replicas. The
  // replicas' lengths along the axis may differ (a short last batch); for
  // kMean the element counts along the axis are summed alongside, so the
  // mean weighs every element of every replica equally.
  if (value.num_replicas() != static_cast<std::size_t>(impl.num_local_replicas)) {
    detail::validate_per_replica(impl, value, operation, 0);  // reports the count
  }
  const int dim = detail::normalize_axis(*axis, value[0].rank(), operation, impl.error_rank());
  for (std::size_t r = 1; r < value.num_replicas(); ++r) {
    bool compatible = value[r].dtype() == value[0].dtype() && value[r].rank() == value[0].rank();
    for (int d = 0; compatible && d < value[0].rank(); ++d) {
      compatible = d == dim || value[r].dim(d) == value[0].dim(d);
    }
    if (!compatible) {
      throw InvalidArgumentError(operation, impl.error_rank(),
                                 "local replica " + std::to_string(r) + " holds " +
                                     value[r].debug_string() + " but replica 0 holds " +
                                     value[0].debug_string() + " (only axis " +
                                     std::to_string(*axis) + " may differ)");
    }
  }
  if (detail::reduces_in_float32(value[0].dtype(), op)) {
    // The sums along the axis are partials too: float32 throughout, one
    // rounding at the end (the replicas' dtypes agree, checked above).
    std::vector<Tensor> wide;
    for (const Tensor& replica_value : value.values()) {
      wide.push_back(detail::widened_to_float32(replica_value));
    }
    return detail::rounded_from_float32(reduce(op, PerReplica<Tensor>(std::move(wide)), axis),
                                        value[0].dtype());
  }
  std::vector<Tensor> partial;
  std::vector<Tensor> counts;
  for (const Tensor& replica_value : value.values()) {
    partial.push_back(detail::reduce_along_axis(op, replica_value, dim));
    counts.push_back(Tensor::scalar<std::int64_t>(replica_value.dim(dim)));
  }
  if (op != ReduceOp::kMean) {
    return impl.batch_reduce(op, {PerReplica<Tensor>(std::move(partial))}).front();
  }
  std::vector<Tensor> sums = impl.batch_reduce(
      ReduceOp::kSum,
      {PerReplica<Tensor>(std::move(partial)), PerReplica<Tensor>(std::move(counts))});
  const std::int64_t total = sums[1].values<std::int64_t>()[0];
  Tensor result = std::move(sums[0]);
  if (total == 0 && !detail::is_floating(result.dtype())) {
    throw InvalidArgumentError(
        operation, impl.error_rank(),
        "the mean along axis " + std::to_string(*axis) + " is over zero elements");
  }
  if (total == 0) {
    // 0/0: NaN for every entry, as tf.reduce_mean gives for an empty axis.
    std::vector<double> nan(result.num_elements(), std::numeric_limits<double>::quiet_NaN());
    return Tensor::from_doubles(result.dtype(), nan, result.shape());
  }
  detail::divide_in_place(result.dtype(), result.raw_data(), result.num_elements(), total);
  return result;
}

Tensor Strategy::reduce(ReduceOp op, const Tensor& value, std::optional<int> axis) {
  detail::StrategyImpl& impl = extended_->impl();
  const int replicas = impl.num_replicas_in_sync();
  // Ops under which equal values do not reduce to themselves.
  if (replicas > 1 &&
      (op == ReduceOp::kSum || op == ReduceOp::kProd || op == ReduceOp::kBitwiseXor)) {
    throw InvalidArgumentError(impl.label() + " reduce", impl.error_rank(),
                               "a value that is not distributed cannot be reduced with " +
                                   std::string(to_string(op)) + " over " +
                                   std::to_string(replicas) +
                                   " replicas; pass the PerReplica value returned by run()");
  }
  // The same value on every local replica.
  return reduce(op,
                PerReplica<Tensor>(
                    std::vector<Tensor>(static_cast<std::size_t>(impl.num_local_replicas), value)),
                axis);
}

std::vector<Tensor> Strategy::experimental_local_results(const Variable& variable) const {
  return variable.local_values();
}

Tensor Strategy::gather(const PerReplica<Tensor>& value, int axis) {
  detail::StrategyImpl& impl = extended_->impl();
  const std::string operation = impl.label() + " gather";
  const ContextFrame* frame = detail::current_frame();
  if (frame != nullptr && frame->replica != nullptr) {
    throw InvalidArgumentError(operation, impl.error_rank(),
                               "gather() must be called in the cross-replica context; inside "
                               "run() use ReplicaContext::all_gather");
  }
  const detail::CallPurpose purpose("Strategy.gather");
  return impl.gather(value, axis, operation);
}

Strategy& get_strategy() {
  const ContextFrame* frame = detail::current_frame();
  return frame != nullptr ? *frame->strategy : detail::default_strategy();
}

bool has_strategy() { return &get_strategy() != &detail::default_strategy(); }

ReplicaContext* get_replica_context() {
  const ContextFrame* frame = detail::current_frame();
  if (frame == nullptr) return &detail::default_replica_context();
  return frame->replica;
}

bool in_cross_replica_context() {
  const ContextFrame* frame = detail::current_frame();
  return frame != nullptr && frame->replica == nullptr;
}

namespace {
// The frame experimental_set_strategy pushed on this thread, if any.
thread_local std::optional<std::uint64_t> t_set_strategy_frame;
}  // namespace

void experimental_set_strategy(Strategy* strategy) {
  const ContextFrame* frame = detail::current_frame();
  if (frame != nullptr && !(t_set_strategy_frame && frame->id == *t_set_strategy_frame)) {
    throw InvalidArgumentError(
        "experimental_set_strategy", frame->strategy->extended().impl().error_rank(),
        std::string("must not be called inside ") +
            (frame->replica != nullptr ? "run()" : "a scope") + " of " +
            detail::describe_strategy(*frame->strategy) + "; leave it first");
  }
  if (t_set_strategy_frame) {
    detail::pop_frame(*t_set_strategy_frame);
    t_set_strategy_frame.reset();
  }
  if (strategy != nullptr) {
    t_set_strategy_frame = detail::push_frame(ContextFrame::Kind::kScope, strategy, nullptr);
  }
}

ReduceOp get_loss_reduction() { return ReduceOp::kSum; }

// ---- input: the distributed dataset holds this strategy's implementation --

DistributedDataset Strategy::experimental_distribute_dataset(const Dataset& dataset,
                                                             const InputOptions& options) {
  return detail::distribute_dataset(extended_->shared_impl(), dataset, options);
}

DistributedDataset Strategy::distribute_datasets_from_function(
    const std::function<Dataset(const InputContext&)>& fn, const InputOptions& options) {
  return detail::distribute_datasets_from_function(extended_->shared_impl(), fn, options);
}

}  // namespace collective::distribute
