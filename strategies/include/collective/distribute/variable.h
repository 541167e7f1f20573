// Variables whose placement follows the strategy in scope when they are
// created (tf.Variable under strategy.scope()).
//
// Under MirroredStrategy or MultiWorkerMirroredStrategy a variable is a
// mirrored variable (tf.distribute's MirroredVariable): one copy per local
// replica, kept identical because every update is applied to every copy
// with the same, already all-reduced, value. Elsewhere it has one copy.
//
// A Variable is a handle: copies refer to the same variable. It belongs to
// the strategy it was created under; using it inside another strategy's
// run() raises InvalidArgumentError.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collective/distribute/tensor.h"

namespace collective::distribute {

class StrategyExtended;

// How updates made in a replica context are combined
// (tf.VariableAggregation).
enum class VariableAggregation : int {
  kNone = 0,          // updating in a replica context with >1 replica is an error
  kSum,               // the sum of every replica's update
  kMean,              // the mean of every replica's update
  kOnlyFirstReplica,  // replica 0's update (of worker 0)
};

std::string_view to_string(VariableAggregation aggregation);

struct VariableOptions {
  std::string name = "Variable";
  VariableAggregation aggregation = VariableAggregation::kNone;
  bool trainable = true;
};

namespace detail {
struct VariableState;
}  // namespace detail

class Variable {
 public:
  // Creates the variable under the current strategy (get_strategy()). In a
  // replica context, creation goes through merge_call: every replica must
  // create its variables in the same order and gets the same variable,
  // initialised from local replica 0's initial_value.
  explicit Variable(const Tensor& initial_value, VariableOptions options = {});

  const std::string& name() const;
  DataType dtype() const;
  const Shape& shape() const;
  VariableAggregation aggregation() const;
  bool trainable() const;
  // One copy per local replica of a mirrored strategy.
  bool is_mirrored() const;
  std::size_t num_copies() const;
  // The owning strategy's name, e.g. "MirroredStrategy".
  std::string_view strategy_name() const;

  // In a replica context of the owning strategy: that replica's copy.
  // Elsewhere: local replica 0's copy (all copies are identical).
  Tensor value() const;
  Tensor read_value() const { return value(); }

  // In the cross-replica context (or with no strategy): applied to every
  // copy. In a replica context: combined across replicas by aggregation(),
  // then applied to every copy; every replica must make the same call.
  // value must have the variable's dtype and shape.
  void assign(const Tensor& value);
  void assign_add(const Tensor& delta);
  void assign_sub(const Tensor& delta);

  // Every local copy, in local replica order.
  std::vector<Tensor> local_values() const;

  // Internal: the owning strategy and its copies.
  detail::VariableState& state() const { return *state_; }
  bool same_variable(const Variable& other) const { return state_ == other.state_; }

 private:
  explicit Variable(std::shared_ptr<detail::VariableState> state) : state_(std::move(state)) {}
  friend class StrategyExtended;
  friend struct detail::VariableState;

  std::shared_ptr<detail::VariableState> state_;
};

}  // namespace collective::distribute
