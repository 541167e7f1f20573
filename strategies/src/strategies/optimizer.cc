#include "collective/distribute/optimizer.h"

#include <cmath>

#include "collective/distribute/replica_context.h"
#include "collective/distribute/strategy.h"
#include "collective/errors.h"
#include "base/call_purpose.h"
#include "core/context_stack.h"
#include "values/element_math.h"
#include "core/remote_variable.h"
#include "core/strategy_impl.h"
#include "core/variable_state.h"

namespace collective::distribute {

SGD::SGD(double learning_rate) : learning_rate_(learning_rate) {
  if (!std::isfinite(learning_rate) || learning_rate <= 0) {
    throw InvalidArgumentError(
        "SGD", -1,
        "learning_rate must be finite and positive, got " + std::to_string(learning_rate));
  }
}

namespace {

void validate(const std::vector<std::pair<Tensor, Variable>>& grads_and_vars) {
  for (std::size_t i = 0; i < grads_and_vars.size(); ++i) {
    const auto& [gradient, variable] = grads_and_vars[i];
    if (gradient.dtype() != variable.dtype() || gradient.shape() != variable.shape()) {
      throw InvalidArgumentError("SGD.apply_gradients", -1,
                                 "gradient " + std::to_string(i) + " is " +
                                     gradient.debug_string() + " but variable '" + variable.name() +
                                     "' is " +
                                     Tensor(variable.dtype(), variable.shape()).debug_string());
    }
    if (!detail::is_floating(variable.dtype())) {
      throw InvalidArgumentError("SGD.apply_gradients", -1,
                                 "variable '" + variable.name() + "' is " +
                                     std::string(to_string(variable.dtype())) +
                                     "; gradient steps need a floating type");
    }
  }
}

}  // namespace

void SGD::apply_gradients(const std::vector<std::pair<Tensor, Variable>>& grads_and_vars,
                          bool experimental_aggregate_gradients) {
  validate(grads_and_vars);
  // Inside run(), every variable must belong to the running strategy.
  for (const auto& pair : grads_and_vars) (void)pair.second.value();
  const detail::ContextFrame* frame = detail::current_frame();
  ReplicaContext* context = frame != nullptr ? frame->replica : nullptr;
  if (frame != nullptr && context == nullptr) {
    // Keras raises here: in the cross-replica context the gradients of the
    // replicas are not at hand, and applying one value to every copy
    // would silently skip the reduction.
    const detail::StrategyImpl& impl = frame->strategy->extended().impl();
    throw InvalidArgumentError(
        "SGD.apply_gradients", impl.error_rank(),
        "apply_gradients() cannot be called in the cross-replica context (inside the scope of " +
            impl.label() +
            " but outside run(), or inside merge_call); call it inside "
            "Strategy::run so each replica passes its gradients, or leave the scope to apply "
            "final gradients with no strategy");
  }
  if (context == nullptr) {
    // No strategy in effect (the default strategy's replica context, or a
    // parameter-server closure): the gradients are final; apply them as
    // given to every copy (whichever strategy owns the variable).
    for (const auto& [gradient, variable] : grads_and_vars) {
      detail::VariableState& state = variable.state();
      if (state.remote) {
        // A parameter-server variable: one SGD step applied on its ps.
        state.remote->sgd(state, gradient, learning_rate_);
        continue;
      }
      std::lock_guard<std::mutex> lock(state.mutex);
      for (Tensor& copy : state.copies)
        detail::subtract_scaled_in_place(copy, gradient, learning_rate_);
    }
    iterations_.fetch_add(1);
    return;
  }
  // Replica context: as tf.distribute's optimizers do, sum the gradients over
  // all replicas (one packed batch_reduce), then apply the same update to
  // every copy, once, in the cross-replica context.
  context->merge_call(
      [this, experimental_aggregate_gradients](
          Strategy& strategy,
          const PerReplica<std::vector<std::pair<Tensor, Variable>>>& per_replica) {
        const auto& first = per_replica[0];
        for (std::size_t r = 1; r < per_replica.num_replicas(); ++r) {
          bool same = per_replica[r].size() == first.size();
          for (std::size_t i = 0; same && i < first.size(); ++i) {
            same = per_replica[r][i].second.same_variable(first[i].second);
          }
          if (!same) {
            throw MismatchError("SGD.apply_gradients", strategy.extended().worker_index(),
                                "local replica " + std::to_string(r) +
                                    " passed different variables than replica 0; every replica "
                                    "must update the same variables in the same order");
          }
        }
        std::vector<Tensor> gradients;
        if (experimental_aggregate_gradients) {
          std::vector<PerReplica<Tensor>> per_variable(first.size());
          for (std::size_t i = 0; i < first.size(); ++i) {
            std::vector<Tensor> replicas;
            for (const auto& list : per_replica.values()) replicas.push_back(list[i].first);
            per_variable[i] = PerReplica<Tensor>(std::move(replicas));
          }
          const detail::CallPurpose purpose("SGD.apply_gradients (gradient reduction)");
          gradients = strategy.extended().batch_reduce_to(ReduceOp::kSum, per_variable);
        } else {
          for (const auto& pair : first) gradients.push_back(pair.first);
        }
        for (std::size_t i = 0; i < first.size(); ++i) {
          Variable target = first[i].second;
          if (target.state().remote) {
            // A parameter-server variable: the local replicas' summed
            // gradient, one SGD step pushed to its ps.
            target.state().remote->sgd(target.state(), gradients[i], learning_rate_);
            continue;
          }
          strategy.extended().update(target, [&](Tensor& copy) {
            detail::subtract_scaled_in_place(copy, gradients[i], learning_rate_);
          });
        }
        iterations_.fetch_add(1);
      },
      grads_and_vars);
}

}  // namespace collective::distribute
