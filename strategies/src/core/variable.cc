#include "collective/distribute/variable.h"

#include "collective/distribute/replica_context.h"
#include "collective/errors.h"
#include "core/context_stack.h"
#include "values/element_math.h"
#include "core/remote_variable.h"
#include "core/strategy_access.h"
#include "core/strategy_impl.h"
#include "base/call_purpose.h"
#include "core/variable_state.h"

namespace collective::distribute {

using detail::ContextFrame;
using detail::VariableState;

std::string_view to_string(VariableAggregation aggregation) {
  switch (aggregation) {
    case VariableAggregation::kNone: return "NONE";
    case VariableAggregation::kSum: return "SUM";
    case VariableAggregation::kMean: return "MEAN";
    case VariableAggregation::kOnlyFirstReplica: return "ONLY_FIRST_REPLICA";
  }
  return "unknown";
}

std::string_view to_string(VariableSynchronization synchronization) {
  switch (synchronization) {
    case VariableSynchronization::kAuto: return "AUTO";
    case VariableSynchronization::kNone: return "NONE";
    case VariableSynchronization::kOnWrite: return "ON_WRITE";
    case VariableSynchronization::kOnRead: return "ON_READ";
  }
  return "unknown";
}

namespace detail {

VariableState::VariableState()
    : aggregation(VariableAggregation::kNone), synchronization(VariableSynchronization::kOnWrite) {}

Variable VariableState::handle(std::shared_ptr<VariableState> state) {
  return Variable(std::move(state));
}

}  // namespace detail

namespace {

std::shared_ptr<VariableState> make_state(Strategy& strategy, const Tensor& initial_value,
                                          const VariableOptions& options) {
  const detail::StrategyImpl& impl = detail::impl_of(strategy);
  auto state = std::make_shared<VariableState>();
  state->name = options.name;
  state->aggregation = options.aggregation;
  state->trainable = options.trainable;
  state->strategy_serial = impl.serial;
  state->strategy_name = impl.name;
  state->strategy_label = impl.label();
  state->strategy_impl = detail::shared_impl_of(strategy);
  state->dtype = initial_value.dtype();
  state->shape = initial_value.shape();
  const std::string operation = impl.label() + " Variable";
  switch (options.synchronization) {
    case VariableSynchronization::kAuto:
    case VariableSynchronization::kOnWrite:
      state->synchronization = VariableSynchronization::kOnWrite;
      break;
    case VariableSynchronization::kNone:
      if (impl.mirrored_variables) {
        throw InvalidArgumentError(operation, impl.error_rank(),
                                   "variable '" + options.name +
                                       "': synchronization NONE is not "
                                       "supported under " +
                                       impl.name +
                                       " (as in tf.distribute); use "
                                       "kOnWrite or kOnRead");
      }
      state->synchronization = VariableSynchronization::kNone;
      break;
    case VariableSynchronization::kOnRead:
      if (impl.place_variable) {
        throw UnsupportedError(operation, impl.error_rank(),
                               "variable '" + options.name +
                                   "': sync-on-read variables are not "
                                   "supported by " +
                                   impl.name +
                                   ", whose variables live on ps tasks; "
                                   "accumulate per worker in a closure's result instead");
      }
      state->synchronization = VariableSynchronization::kOnRead;
      break;
    default:
      throw InvalidArgumentError(operation, impl.error_rank(),
                                 "variable '" + options.name +
                                     "': unknown VariableSynchronization " +
                                     std::to_string(static_cast<int>(options.synchronization)));
  }
  if (static_cast<int>(options.aggregation) < 0 ||
      static_cast<int>(options.aggregation) >
          static_cast<int>(VariableAggregation::kOnlyFirstReplica)) {
    throw InvalidArgumentError(operation, impl.error_rank(),
                               "variable '" + options.name + "': unknown VariableAggregation " +
                                   std::to_string(static_cast<int>(options.aggregation)));
  }
  const bool on_read = state->synchronization == VariableSynchronization::kOnRead;
  // A sync-on-read variable has a copy per local replica wherever replicas
  // run (CentralStorageStrategy's one-copy variables included).
  state->mirrored = impl.mirrored_variables && !on_read;
  const std::size_t copies =
      impl.mirrored_variables || on_read ? static_cast<std::size_t>(impl.num_local_replicas) : 1;
  if (impl.place_variable) {
    impl.place_variable(*state, initial_value);
  } else if (impl.broadcast_initial_values && impl.num_workers > 1) {
    // Every worker starts from the chief's value, so a rank-dependent or
    // time-seeded initializer cannot leave the workers apart.
    const detail::CallPurpose purpose("the chief's initial value of variable", options.name);
    state->copies.assign(copies, detail::impl_of(strategy).broadcast_from_chief(
                                     initial_value, "variable '" + options.name + "'", operation));
  } else {
    state->copies.assign(copies, initial_value);
  }
  if (impl.elastic_state) {
    // Restored when a step that lost a worker is redone (elastic training).
    detail::StrategyImpl::ElasticState& elastic = *impl.elastic_state;
    const std::lock_guard<std::mutex> lock(elastic.mutex);
    std::erase_if(elastic.variables, [](const auto& weak) { return weak.expired(); });
    elastic.variables.push_back(state);
  }
  return state;
}

// The frame of a run() (replica or merge function) this thread is in, or
// nullptr. Scopes inside run() keep the replica context, so the innermost
// frame says enough.
const ContextFrame* run_frame() {
  const ContextFrame* frame = detail::current_frame();
  if (frame == nullptr) return nullptr;
  return detail::inside_run_on_this_thread() ? frame : nullptr;
}

// A variable may only be used inside run() of the strategy that owns it.
void check_owner(const VariableState& state, const char* operation) {
  const ContextFrame* frame = run_frame();
  if (frame == nullptr) return;
  const detail::StrategyImpl& running = detail::impl_of(*frame->strategy);
  if (running.serial != state.strategy_serial) {
    throw InvalidArgumentError(
        std::string("Variable.") + operation, running.error_rank(),
        "variable '" + state.name + "' was created under " + state.strategy_label +
            " but is used inside run() of " + running.label() +
            "; create variables under the scope of the strategy that runs them");
  }
}

void check_compatible(const VariableState& state, const Tensor& value, const char* operation) {
  if (value.dtype() != state.dtype || value.shape() != state.shape) {
    throw InvalidArgumentError(std::string("Variable.") + operation, -1,
                               "variable '" + state.name + "' is " +
                                   Tensor(state.dtype, state.shape).debug_string() +
                                   " but the value is " + value.debug_string());
  }
}

enum class UpdateKind { kAssign, kAdd, kSubtract };

void apply(Tensor& copy, const Tensor& value, UpdateKind kind) {
  switch (kind) {
    case UpdateKind::kAssign: copy = value; break;
    case UpdateKind::kAdd: detail::add_in_place(copy, value, +1); break;
    case UpdateKind::kSubtract: detail::add_in_place(copy, value, -1); break;
  }
}

void apply_to_all(VariableState& state, const Tensor& value, UpdateKind kind) {
  std::lock_guard<std::mutex> lock(state.mutex);
  for (Tensor& copy : state.copies) apply(copy, value, kind);
}

void apply_remote(const VariableState& state, const Tensor& value, UpdateKind kind) {
  state.remote->update(state, value,
                       kind == UpdateKind::kAssign ? 0
                       : kind == UpdateKind::kAdd  ? 1
                                                   : -1);
}

// Sync-on-read: a replica touches its own copy; the cross-replica context
// follows tf.distribute's on_read_assign*_cross_replica.
void update_on_read(VariableState& state, const Tensor& value, UpdateKind kind,
                    const char* operation) {
  const ContextFrame* frame = detail::current_frame();
  if (frame != nullptr && frame->replica != nullptr) {
    std::lock_guard<std::mutex> lock(state.mutex);
    const std::size_t copy =
        state.copies.size() == 1 ? 0 : static_cast<std::size_t>(frame->replica->local_replica_id());
    apply(state.copies[copy], value, kind);
    return;
  }
  const int replicas = state.strategy_impl->num_replicas_in_sync();
  if (replicas > 1 && state.aggregation == VariableAggregation::kSum) {
    if (kind != UpdateKind::kAssign) {
      throw InvalidArgumentError(
          std::string("Variable.") + operation, state.strategy_impl->error_rank(),
          "sync-on-read variable '" + state.name + "' with aggregation SUM cannot be updated by " +
              operation + " in the cross-replica context (as in tf.distribute): the read sums " +
              std::to_string(replicas) + " copies; use assign, or update it inside run()");
    }
    // Each copy gets value / replicas, so the summing read gives value back.
    Tensor share = value;
    detail::divide_in_place(share.dtype(), share.raw_data(), share.num_elements(), replicas);
    apply_to_all(state, share, kind);
    return;
  }
  apply_to_all(state, value, kind);
}

Tensor read_on_read_cross_replica(const VariableState& state) {
  std::vector<Tensor> copies;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    copies = state.copies;
  }
  const int replicas = state.strategy_impl->num_replicas_in_sync();
  if (replicas == 1 || state.aggregation == VariableAggregation::kOnlyFirstReplica) {
    return std::move(copies.front());
  }
  detail::StrategyImpl& impl = *state.strategy_impl;
  if (state.aggregation == VariableAggregation::kNone) {
    throw InvalidArgumentError("Variable.value", impl.error_rank(),
                               "sync-on-read variable '" + state.name +
                                   "' has aggregation NONE, so " + "its " +
                                   std::to_string(replicas) + " per-replica copies cannot " +
                                   "be combined in the cross-replica context; give it SUM, MEAN or "
                                   "ONLY_FIRST_REPLICA, or read it inside run()");
  }
  const ReduceOp op =
      state.aggregation == VariableAggregation::kSum ? ReduceOp::kSum : ReduceOp::kMean;
  const detail::CallPurpose purpose("Variable.value of sync-on-read variable", state.name);
  return impl.batch_reduce(op, {PerReplica<Tensor>(std::move(copies))}).front();
}

void update(VariableState& state, const Tensor& value, UpdateKind kind, const char* operation) {
  check_compatible(state, value, operation);
  check_owner(state, operation);
  if (state.synchronization == VariableSynchronization::kOnRead) {
    update_on_read(state, value, kind, operation);
    return;
  }
  const ContextFrame* frame = detail::current_frame();
  ReplicaContext* context = frame != nullptr ? frame->replica : nullptr;
  const int local_replicas =
      context == nullptr ? 1 : detail::impl_of(context->strategy()).num_local_replicas;
  if (state.remote && local_replicas == 1) {
    // A parameter-server variable updated by one replica: one push.
    apply_remote(state, value, kind);
    return;
  }
  if (context == nullptr || context->num_replicas_in_sync() == 1) {
    apply_to_all(state, value, kind);
    return;
  }
  if (state.aggregation == VariableAggregation::kNone) {
    throw InvalidArgumentError(
        std::string("Variable.") + operation, detail::impl_of(context->strategy()).worker_index,
        "variable '" + state.name + "' is updated in a replica context of " + state.strategy_label +
            " (" + std::to_string(context->num_replicas_in_sync()) +
            " replicas) but its aggregation is NONE: give it an aggregation (VariableOptions::"
            "aggregation) to say how replicas' updates combine, or update it in the "
            "cross-replica context");
  }
  // Combine every replica's value once, in the cross-replica context, and
  // apply the result to every copy.
  context->merge_call(
      [&state, kind](Strategy& strategy, const PerReplica<Tensor>& values) {
        detail::StrategyImpl& impl = detail::impl_of(strategy);
        const detail::CallPurpose purpose("aggregated update of variable", state.name);
        Tensor combined;
        switch (state.aggregation) {
          case VariableAggregation::kSum: combined = impl.reduce_to(ReduceOp::kSum, values); break;
          case VariableAggregation::kMean:
            combined = impl.reduce_to(ReduceOp::kMean, values);
            break;
          case VariableAggregation::kOnlyFirstReplica:
          case VariableAggregation::kNone:
          default:
            // tf.distribute's ONLY_FIRST_REPLICA: this worker's first local
            // replica's value, no communication (each worker takes its own,
            // so workers whose replica 0 values differ end up different).
            combined = values[0];
            break;
        }
        // A parameter-server variable: the worker's local replicas
        // reduced synchronously; one push of the result to its ps.
        if (state.remote) {
          apply_remote(state, combined, kind);
        } else {
          apply_to_all(state, combined, kind);
        }
      },
      value);
}

}  // namespace

Variable::Variable(const Tensor& initial_value, VariableOptions options) {
  const ContextFrame* frame = detail::current_frame();
  if (frame != nullptr && frame->replica != nullptr && detail::inside_run_on_this_thread()) {
    // Created inside run(): one variable for all replicas, made once in the
    // cross-replica context from local replica 0's initial value.
    *this = frame->replica->merge_call(
        [&](Strategy& strategy) { return Variable(make_state(strategy, initial_value, options)); });
    return;
  }
  state_ = make_state(detail::current_strategy(), initial_value, options);
}

const std::string& Variable::name() const { return state_->name; }
DataType Variable::dtype() const { return state_->dtype; }
const Shape& Variable::shape() const { return state_->shape; }
VariableAggregation Variable::aggregation() const { return state_->aggregation; }
bool Variable::trainable() const { return state_->trainable; }
bool Variable::is_mirrored() const { return state_->mirrored; }
bool Variable::is_sync_on_read() const {
  return state_->synchronization == VariableSynchronization::kOnRead;
}
VariableSynchronization Variable::synchronization() const { return state_->synchronization; }
std::size_t Variable::num_copies() const { return state_->copies.size(); }
std::string_view Variable::strategy_name() const { return state_->strategy_name; }

Tensor Variable::value() const {
  check_owner(*state_, "value");
  if (state_->remote) return state_->remote->read(*state_);
  const ContextFrame* frame = detail::current_frame();
  const bool in_replica = frame != nullptr && frame->replica != nullptr;
  if (state_->synchronization == VariableSynchronization::kOnRead && !in_replica) {
    return read_on_read_cross_replica(*state_);
  }
  std::size_t copy = 0;
  if (in_replica && state_->copies.size() > 1) {
    copy = static_cast<std::size_t>(frame->replica->local_replica_id());
  }
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->copies[copy];
}

void Variable::assign(const Tensor& value) {
  update(*state_, value, UpdateKind::kAssign, "assign");
}
void Variable::assign_add(const Tensor& delta) {
  update(*state_, delta, UpdateKind::kAdd, "assign_add");
}
void Variable::assign_sub(const Tensor& delta) {
  update(*state_, delta, UpdateKind::kSubtract, "assign_sub");
}

namespace {
VariableOptions on_read(VariableOptions options) {
  if (options.synchronization != VariableSynchronization::kAuto &&
      options.synchronization != VariableSynchronization::kOnRead) {
    throw InvalidArgumentError("SyncOnReadVariable", -1,
                               "variable '" + options.name + "' is given synchronization " +
                                   std::string(to_string(options.synchronization)) +
                                   "; a SyncOnReadVariable is ON_READ");
  }
  options.synchronization = VariableSynchronization::kOnRead;
  return options;
}
}  // namespace

SyncOnReadVariable::SyncOnReadVariable(const Tensor& initial_value, VariableOptions options)
    : Variable(initial_value, on_read(std::move(options))) {}

std::vector<Tensor> Variable::local_values() const {
  if (state_->remote) return {state_->remote->read(*state_)};
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->copies;
}

}  // namespace collective::distribute
