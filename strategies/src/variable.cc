#include "collective/distribute/variable.h"

#include "collective/distribute/replica_context.h"
#include "collective/distribute/strategy.h"
#include "collective/errors.h"
#include "context_stack.h"
#include "element_math.h"
#include "remote_variable_ops.h"
#include "strategy_impl.h"
#include "variable_state.h"

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

namespace {

std::shared_ptr<VariableState> make_state(Strategy& strategy, const Tensor& initial_value,
                                          const VariableOptions& options) {
  const detail::StrategyImpl& impl = strategy.extended().impl();
  auto state = std::make_shared<VariableState>();
  state->name = options.name;
  state->aggregation = options.aggregation;
  state->trainable = options.trainable;
  state->strategy_serial = impl.serial;
  state->strategy_name = impl.name;
  state->strategy_label = impl.label();
  state->mirrored = impl.mirrored_variables;
  state->dtype = initial_value.dtype();
  state->shape = initial_value.shape();
  const std::size_t copies =
      impl.mirrored_variables ? static_cast<std::size_t>(impl.num_local_replicas) : 1;
  if (impl.place_variable) {
    impl.place_variable(*state, initial_value);
  } else {
    state->copies.assign(copies, initial_value);
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
  const detail::StrategyImpl& running = frame->strategy->extended().impl();
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
  detail::remote_update(state, value, kind == UpdateKind::kAssign ? 0 : kind == UpdateKind::kAdd ? 1 : -1);
}

void update(VariableState& state, const Tensor& value, UpdateKind kind, const char* operation) {
  check_compatible(state, value, operation);
  check_owner(state, operation);
  const ContextFrame* frame = detail::current_frame();
  ReplicaContext* context = frame != nullptr ? frame->replica : nullptr;
  const int local_replicas = context == nullptr ? 1 : context->strategy().extended().num_local_replicas();
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
        std::string("Variable.") + operation, context->strategy().extended().worker_index(),
        "variable '" + state.name + "' is updated in a replica context of " +
            state.strategy_label + " (" + std::to_string(context->num_replicas_in_sync()) +
            " replicas) but its aggregation is NONE: give it an aggregation (VariableOptions::"
            "aggregation) to say how replicas' updates combine, or update it in the "
            "cross-replica context");
  }
  // Combine every replica's value once, in the cross-replica context, and
  // apply the result to every copy.
  context->merge_call(
      [&state, kind](Strategy& strategy, const PerReplica<Tensor>& values) {
        StrategyExtended& extended = strategy.extended();
        Tensor combined;
        switch (state.aggregation) {
          case VariableAggregation::kSum:
            combined = extended.reduce_to(ReduceOp::kSum, values);
            break;
          case VariableAggregation::kMean:
            combined = extended.reduce_to(ReduceOp::kMean, values);
            break;
          default: {
            // Replica 0 of worker 0 contributes its value, everyone else
            // zeros: the sum is that value, bit for bit, on every worker.
            std::vector<Tensor> contributions;
            for (std::size_t r = 0; r < values.num_replicas(); ++r) {
              const bool first = extended.worker_index() == 0 && r == 0;
              contributions.push_back(first ? values[r] : Tensor(values[r].dtype(), values[r].shape()));
            }
            combined = extended.reduce_to(ReduceOp::kSum, PerReplica<Tensor>(std::move(contributions)));
            break;
          }
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
  state_ = make_state(get_strategy(), initial_value, options);
}

const std::string& Variable::name() const { return state_->name; }
DataType Variable::dtype() const { return state_->dtype; }
const Shape& Variable::shape() const { return state_->shape; }
VariableAggregation Variable::aggregation() const { return state_->aggregation; }
bool Variable::trainable() const { return state_->trainable; }
bool Variable::is_mirrored() const { return state_->mirrored; }
std::size_t Variable::num_copies() const { return state_->copies.size(); }
std::string_view Variable::strategy_name() const { return state_->strategy_name; }

Tensor Variable::value() const {
  check_owner(*state_, "value");
  if (state_->remote) return detail::remote_read(*state_);
  const ContextFrame* frame = detail::current_frame();
  std::size_t copy = 0;
  if (frame != nullptr && frame->replica != nullptr && state_->mirrored) {
    copy = static_cast<std::size_t>(frame->replica->local_replica_id());
  }
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->copies[copy];
}

void Variable::assign(const Tensor& value) { update(*state_, value, UpdateKind::kAssign, "assign"); }
void Variable::assign_add(const Tensor& delta) {
  update(*state_, delta, UpdateKind::kAdd, "assign_add");
}
void Variable::assign_sub(const Tensor& delta) {
  update(*state_, delta, UpdateKind::kSubtract, "assign_sub");
}

std::vector<Tensor> Variable::local_values() const {
  if (state_->remote) return {detail::remote_read(*state_)};
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->copies;
}

}  // namespace collective::distribute
