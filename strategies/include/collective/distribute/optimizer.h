// Stochastic gradient descent that is strategy-aware, as Keras optimizers
// are under tf.distribute: inside Strategy::run, apply_gradients first sums
// each gradient over all replicas (one batch_reduce, packed), then applies
// the same update to every copy of each mirrored variable. Compute the loss
// as (sum of per-example losses) / global_batch_size, as the tf.distribute
// guide says, so the summed gradient is the global batch's mean gradient.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "collective/distribute/tensor.h"
#include "collective/distribute/variable.h"

namespace collective::distribute {

class SGD {
 public:
  // learning_rate must be finite and positive (InvalidArgumentError).
  explicit SGD(double learning_rate);

  double learning_rate() const { return learning_rate_; }
  // Number of apply_gradients steps taken.
  std::int64_t iterations() const { return iterations_.load(); }
  // Restoring a checkpoint sets the count.
  void set_iterations(std::int64_t iterations) { iterations_.store(iterations); }

  // variable -= learning_rate * gradient, for each pair. In a replica
  // context every replica must call it with gradients of the same shapes,
  // in the same order; with experimental_aggregate_gradients = false the
  // gradients are taken as already summed over replicas. With no strategy
  // in effect (outside every scope, as under tf.distribute's default
  // strategy) the gradients are applied as given. In the cross-replica
  // context (inside a scope but outside run(), or inside merge_call) it
  // raises InvalidArgumentError, as Keras raises there.
  // Gradients must match their variable's dtype (a floating type) and shape.
  void apply_gradients(const std::vector<std::pair<Tensor, Variable>>& grads_and_vars,
                       bool experimental_aggregate_gradients = true);

 private:
  double learning_rate_;
  std::atomic<std::int64_t> iterations_{0};
};

}  // namespace collective::distribute
