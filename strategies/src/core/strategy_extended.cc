#include "collective/distribute/strategy_extended.h"

#include <algorithm>
#include <exception>

#include "collective/distribute/cross_device_ops.h"
#include "collective/distribute/replica_context.h"
#include "core/strategy_access.h"
#include "collective/distribute/variable.h"
#include "collective/diagnostics.h"
#include "collective/errors.h"
#include "core/context_stack.h"
#include "core/elastic_step.h"
#include "core/rendezvous_run.h"
#include "base/call_purpose.h"
#include "core/strategy_impl.h"
#include "reduce/worker_calls.h"
#include "core/variable_state.h"

namespace collective::distribute {

using detail::ContextFrame;

StrategyExtended::StrategyExtended(std::unique_ptr<detail::StrategyImpl> impl)
    : impl_(std::move(impl)) {}

StrategyExtended::~StrategyExtended() = default;

const std::vector<std::string>& StrategyExtended::worker_devices() const {
  return impl_->worker_devices;
}
const std::vector<std::string>& StrategyExtended::parameter_devices() const {
  return impl_->parameter_devices;
}
int StrategyExtended::num_local_replicas() const { return impl_->num_local_replicas; }
int StrategyExtended::num_replicas_in_sync() const { return impl_->num_replicas_in_sync(); }
int StrategyExtended::num_workers() const { return impl_->num_workers; }
int StrategyExtended::worker_index() const { return impl_->worker_index; }
int StrategyExtended::elastic_steps_redone() const {
  return impl_->elastic_state ? impl_->elastic_state->steps_redone : 0;
}
bool StrategyExtended::should_checkpoint() const { return impl_->worker_index == 0; }
bool StrategyExtended::should_save_summary() const { return impl_->worker_index == 0; }
const CommunicationOptions& StrategyExtended::communication_options() const {
  return impl_->communication_options;
}
CrossDeviceOps& StrategyExtended::cross_device_ops() { return *impl_->cross_device_ops; }

Tensor StrategyExtended::reduce_to(ReduceOp op, const PerReplica<Tensor>& value) {
  return impl_->reduce_to(op, value);
}

std::vector<Tensor> StrategyExtended::batch_reduce_to(
    ReduceOp op, const std::vector<PerReplica<Tensor>>& values) {
  impl_->require_cross_replica(impl_->label() + " batch_reduce_to");
  const detail::CallPurpose purpose("StrategyExtended.batch_reduce_to");
  return impl_->batch_reduce(op, values);
}

void StrategyExtended::update(Variable& variable, const std::function<void(Tensor&)>& fn) {
  update_copies(
      variable, [&fn](Tensor& copy, std::size_t) { fn(copy); }, 0);
}

void StrategyExtended::update_copies(Variable& variable,
                                     const std::function<void(Tensor&, std::size_t)>& fn,
                                     std::size_t num_per_copy_values) {
  const std::string operation = impl_->label() + " update";
  impl_->require_cross_replica(operation);
  detail::VariableState& state = variable.state();
  if (state.strategy_serial != impl_->serial) {
    throw InvalidArgumentError(operation, impl_->error_rank(),
                               "variable '" + state.name + "' belongs to " + state.strategy_label +
                                   ", not to " + impl_->label());
  }
  if (state.remote) {
    throw UnsupportedError(operation, impl_->error_rank(),
                           "variable '" + state.name +
                               "' lives on ps tasks and has no local "
                               "copies to update; use assign / assign_add / assign_sub");
  }
  std::lock_guard<std::mutex> lock(state.mutex);
  if (num_per_copy_values != 0 && num_per_copy_values != state.copies.size()) {
    throw InvalidArgumentError(operation, impl_->error_rank(),
                               "the distributed arguments do not all have one value per copy of "
                               "variable '" +
                                   state.name + "' (" + std::to_string(state.copies.size()) +
                                   " copies)");
  }
  for (std::size_t index = 0; index < state.copies.size(); ++index) {
    Tensor& copy = state.copies[index];
    fn(copy, index);
    if (copy.dtype() != state.dtype || copy.shape() != state.shape) {
      throw InvalidArgumentError(operation, impl_->error_rank(),
                                 "the update function turned variable '" + state.name + "' into " +
                                     copy.debug_string() + "; updates must keep dtype and shape");
    }
  }
}

Mirrored<Tensor> StrategyExtended::broadcast_to(const Tensor& value) const {
  return impl_->cross_device_ops->broadcast(value,
                                            static_cast<std::size_t>(impl_->num_local_replicas));
}

Mirrored<Tensor> StrategyExtended::broadcast_to(const Tensor& value,
                                                const Variable& destinations) const {
  const detail::VariableState& state = destinations.state();
  if (state.strategy_serial != impl_->serial) {
    throw InvalidArgumentError(impl_->label() + " broadcast_to", impl_->error_rank(),
                               "destinations: variable '" + state.name + "' belongs to " +
                                   state.strategy_label + ", not to " + impl_->label());
  }
  return Mirrored<Tensor>(
      std::vector<Tensor>(std::max<std::size_t>(destinations.num_copies(), 1), value));
}

bool StrategyExtended::variable_created_in_scope(const Variable& variable) const {
  return variable.state().strategy_serial == impl_->serial;
}

Variable StrategyExtended::value_container(const Variable& variable) const { return variable; }

std::shared_ptr<const detail::VariableState> StrategyExtended::shared_state(
    const Variable& variable) {
  return variable.state_;
}

StrategyExtended::ColocationScope::ColocationScope(StrategyExtended& extended,
                                                   const Variable& variable)
    : impl_(extended.impl()) {
  const detail::VariableState& state = variable.state();
  if (state.strategy_serial != impl_.serial) {
    throw InvalidArgumentError(impl_.label() + " colocate_vars_with", impl_.error_rank(),
                               "variable '" + state.name + "' belongs to " + state.strategy_label +
                                   ", not to " + impl_.label());
  }
  previous_ = std::move(impl_.colocate_with);
  impl_.colocate_with = shared_state(variable);
}

StrategyExtended::ColocationScope::~ColocationScope() {
  impl_.colocate_with = std::move(previous_);
}

void StrategyExtended::check_distributed_argument(int index, std::size_t num_values) const {
  if (num_values != static_cast<std::size_t>(impl_->num_local_replicas)) {
    throw InvalidArgumentError(impl_->label() + " run", impl_->error_rank(),
                               "argument " + std::to_string(index) +
                                   " is a distributed value with " + std::to_string(num_values) +
                                   " per-replica values, but the "
                                   "strategy has " +
                                   std::to_string(impl_->num_local_replicas) + " local replicas");
  }
}

void StrategyExtended::check_variable_argument(int index, const Variable& variable) const {
  const detail::VariableState& state = variable.state();
  if (state.strategy_serial != impl_->serial) {
    throw InvalidArgumentError(impl_->label() + " run", impl_->error_rank(),
                               "argument " + std::to_string(index) + " is variable '" + state.name +
                                   "', created under " + state.strategy_label +
                                   "; a variable can only be used inside run() of the strategy "
                                   "whose scope created it");
  }
}

void StrategyExtended::call_for_each_replica(const std::function<void(int)>& fn) {
  detail::StrategyImpl& impl = *impl_;
  const std::string operation = impl.label() + " run";
  if (detail::inside_run_on_this_thread()) {
    throw InvalidArgumentError(operation, impl.error_rank(),
                               "run() cannot be called inside another run() or a merge_call "
                               "function; return to the cross-replica context first");
  }
  const ContextFrame* frame = detail::current_frame();
  if (frame != nullptr && frame->strategy != impl.strategy &&
      frame->strategy != &detail::default_strategy()) {
    throw InvalidArgumentError(operation, impl.error_rank(),
                               "mixing different strategies: run() of " + impl.label() +
                                   " called inside the scope of " +
                                   detail::describe_strategy(*frame->strategy));
  }
  // Destroyed last of this function's locals, after everything that
  // touches `impl`: the destructor may free `impl` as soon as it runs.
  struct RunningReset {
    std::shared_ptr<detail::RunGate> gate;
    ~RunningReset() { gate->leave(); }
  };
  std::shared_ptr<detail::RunGate> gate = impl.run_gate;
  gate->enter(operation, impl.error_rank());
  const RunningReset reset{gate};
  // Every run() that gets this far is one step on every worker, whether its
  // replica functions return or raise (docs/strategies.md, "Pairing of
  // cross-worker calls").
  struct Step {
    detail::WorkerCalls* calls;
    explicit Step(detail::WorkerCalls* c) : calls(c) {
      if (calls != nullptr) calls->begin_step();
    }
    ~Step() {
      if (calls != nullptr) calls->end_step();
    }
  } step{impl.worker_calls.get()};

  const int k = impl.num_local_replicas;
  // One attempt of the step: every local replica runs fn; the first
  // replica's own error is raised once all stopped. Elastic training may
  // make several (a step that lost a worker is redone).
  const auto attempt = [&] {
    detail::RendezvousRun run(impl);
    // The destructor may break this rendezvous only while it exists.
    struct RendezvousAttachment {
      detail::RunGate& gate;
      RendezvousAttachment(detail::RunGate& g, detail::ReplicaRendezvous& rendezvous) : gate(g) {
        gate.attach(&rendezvous);
      }
      ~RendezvousAttachment() { gate.attach(nullptr); }
    } attachment(*gate, run.rendezvous());
    if (impl.replica_contexts.empty()) {
      for (int r = 0; r < k; ++r) {
        impl.replica_contexts.push_back(std::make_unique<ReplicaContext>(
            *impl.strategy, nullptr, r, impl.worker_index * k + r, impl.num_replicas_in_sync(),
            impl.worker_devices[static_cast<std::size_t>(r)]));
      }
    }
    std::vector<std::unique_ptr<ReplicaContext>>& contexts = impl.replica_contexts;
    for (std::size_t r = 0; r < contexts.size(); ++r) {
      ReplicaContext& context = *contexts[r];
      context.run_ = &run;
      // An elastic strategy renumbers its replicas when it loses a worker.
      context.replica_id_in_sync_group_ = impl.worker_index * k + static_cast<int>(r);
      context.num_replicas_in_sync_ = impl.num_replicas_in_sync();
      context.device_ = impl.worker_devices[r];
    }
    struct DetachContexts {
      std::vector<std::unique_ptr<ReplicaContext>>& contexts;
      ~DetachContexts() {
        for (auto& context : contexts) context->run_ = nullptr;
      }
    } detach{contexts};
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(k));
    // char, not bool: replica threads write their own entries concurrently.
    std::vector<char> aborted(static_cast<std::size_t>(k), 0);
    const std::function<void(int)> body = [&](int replica) {
      const std::size_t r = static_cast<std::size_t>(replica);
      detail::FrameGuard frame_guard(ContextFrame::Kind::kReplica, impl.strategy,
                                     contexts[r].get());
      const TraceSlice traced("replica function", "strategies",
                              TraceSlice::enabled() ? "replica " + std::to_string(replica) : "");
      try {
        fn(replica);
        run.rendezvous().replica_finished(replica, false);
      } catch (const detail::ReplicaAbortedError&) {
        errors[r] = std::current_exception();
        aborted[r] = 1;
        run.rendezvous().replica_finished(replica, true);
      } catch (...) {
        errors[r] = std::current_exception();
        run.rendezvous().replica_finished(replica, true);
      }
    };
    if (k == 1) {
      body(0);
    } else {
      impl.threads->run_all(body);
    }
    // The first replica's own error explains the failure; errors raised only
    // because a collective was abandoned come second.
    for (std::size_t r = 0; r < errors.size(); ++r) {
      if (errors[r] && !aborted[r]) std::rethrow_exception(errors[r]);
    }
    for (const std::exception_ptr& error : errors) {
      if (error) std::rethrow_exception(error);
    }
  };
  if (impl.elastic_state) {
    detail::run_elastic_step(impl, attempt);
  } else {
    attempt();
  }
}

}  // namespace collective::distribute
