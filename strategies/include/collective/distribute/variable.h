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
  kNone = 0,  // updating in a replica context with >1 replica is an error
  kSum,       // the sum of every replica's update
  kMean,      // the mean of every replica's update
  // This worker's local replica 0's update, as tf.distribute takes
  // experimental_local_results(value)[0]; no cross-worker communication, so
  // under MultiWorkerMirroredStrategy each worker applies its own replica
  // 0's value (meant for values every replica computes alike, e.g. step
  // counters; values that differ per worker leave the workers' copies
  // different).
  kOnlyFirstReplica,
};

std::string_view to_string(VariableAggregation aggregation);

// When the copies of a variable are brought together
// (tf.VariableSynchronization).
enum class VariableSynchronization : int {
  kAuto = 0,  // kOnWrite
  kNone,      // one copy, never synchronized: refused under a mirrored
              // strategy (as tf.distribute refuses it), one copy elsewhere
  kOnWrite,   // mirrored: every update is combined and applied to every copy
  kOnRead,    // sync-on-read (tf.distribute's SyncOnReadVariable): each
              // replica updates only its own copy, with no communication;
              // a read in the cross-replica context combines the copies of
              // all replicas of all workers by the aggregation
};

std::string_view to_string(VariableSynchronization synchronization);

struct VariableOptions {
  std::string name = "Variable";
  VariableAggregation aggregation = VariableAggregation::kNone;
  bool trainable = true;
  VariableSynchronization synchronization = VariableSynchronization::kAuto;
};

namespace detail {
struct VariableState;
}  // namespace detail

class Variable {
 public:
  // Creates the variable under the current strategy (get_strategy()). In a
  // replica context, creation goes through merge_call: every replica must
  // create its variables in the same order and gets the same variable,
  // initialised from local replica 0's initial_value. Under
  // MultiWorkerMirroredStrategy creation is collective: every worker must
  // create the same variables (dtype and shape; MismatchError otherwise) in
  // the same order, and all of them start from the chief's (worker 0's)
  // initial_value, broadcast at creation as tf.distribute does.
  explicit Variable(const Tensor& initial_value, VariableOptions options = {});

  const std::string& name() const;
  DataType dtype() const;
  const Shape& shape() const;
  VariableAggregation aggregation() const;
  // kAuto is resolved at creation: kOnWrite or kOnRead (or kNone).
  VariableSynchronization synchronization() const;
  bool trainable() const;
  // One copy per local replica of a mirrored strategy (on-write).
  bool is_mirrored() const;
  // VariableSynchronization::kOnRead (tf.distribute's SyncOnReadVariable).
  bool is_sync_on_read() const;
  std::size_t num_copies() const;
  // The owning strategy's name, e.g. "MirroredStrategy".
  std::string_view strategy_name() const;

  // In a replica context of the owning strategy: that replica's copy.
  // Elsewhere: local replica 0's copy (all copies are identical).
  // Sync-on-read variables elsewhere (cross-replica context, or outside
  // every scope): the copies of every replica of every worker combined by
  // the aggregation: kSum and kMean reduce them (under
  // MultiWorkerMirroredStrategy this read is collective: every worker must
  // make it), kOnlyFirstReplica gives local replica 0's copy, kNone raises
  // InvalidArgumentError when there is more than one replica.
  Tensor value() const;
  Tensor read_value() const { return value(); }

  // In the cross-replica context (or with no strategy): applied to every
  // copy. In a replica context: combined across replicas by aggregation(),
  // then applied to every copy; every replica must make the same call.
  // value must have the variable's dtype and shape.
  // Sync-on-read variables: in a replica context each replica updates its
  // own copy only (no aggregation, no communication). In the cross-replica
  // context, as tf.distribute: assign gives every copy the value (divided by
  // num_replicas_in_sync for kSum, so that the read gives it back);
  // assign_add / assign_sub apply to every copy, and raise
  // InvalidArgumentError for kSum.
  void assign(const Tensor& value);
  void assign_add(const Tensor& delta);
  void assign_sub(const Tensor& delta);

  // Every local copy, in local replica order.
  std::vector<Tensor> local_values() const;

  // Internal: the owning strategy and its copies.
  detail::VariableState& state() const { return *state_; }
  bool same_variable(const Variable& other) const { return state_ == other.state_; }

 protected:
  explicit Variable(std::shared_ptr<detail::VariableState> state) : state_(std::move(state)) {}

 private:
  friend class StrategyExtended;
  friend struct detail::VariableState;

  std::shared_ptr<detail::VariableState> state_;
};

// A variable created with VariableSynchronization::kOnRead (the name
// tf.distribute gives such variables): metrics and other per-replica
// accumulators. Every replica under a mirrored strategy has its own copy
// (also under CentralStorageStrategy); not supported by
// ParameterServerStrategy (UnsupportedError), whose variables live on ps
// tasks. options.synchronization must be kAuto or kOnRead.
class SyncOnReadVariable : public Variable {
 public:
  SyncOnReadVariable(const Tensor& initial_value, VariableOptions options = {});
};

}  // namespace collective::distribute
