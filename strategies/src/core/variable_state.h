// What a Variable handle points to: its copies (one per local replica when
// mirrored) and the strategy that owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collective/distribute/tensor.h"

// Declared, not included: variable.h is the header of the Variable that
// this state is behind (variable.cc), which includes this one.
namespace collective::distribute {
enum class VariableAggregation : int;
enum class VariableSynchronization : int;
class Variable;
}  // namespace collective::distribute

namespace collective::distribute::detail {

class RemoteVariable;
struct StrategyImpl;

struct VariableState {
  // aggregation kNone, synchronization kOnWrite (variable.cc).
  VariableState();

  std::string name;
  VariableAggregation aggregation;
  bool trainable = true;
  std::uint64_t strategy_serial = 0;
  std::string strategy_name;   // "MirroredStrategy"
  std::string strategy_label;  // "MirroredStrategy #2"
  bool mirrored = false;
  VariableSynchronization synchronization;
  // The owning strategy's implementation, shared: a variable may outlive
  // the strategy object, and the cross-replica read and update of a
  // sync-on-read variable need its replica count and reductions.
  std::shared_ptr<StrategyImpl> strategy_impl;
  DataType dtype = DataType::kFloat32;
  Shape shape;

  // Guards copies: replica threads read their own copy while merge
  // functions (on one thread) update all of them.
  mutable std::mutex mutex;
  std::vector<Tensor> copies;

  // ParameterServerStrategy: the value lives on ps tasks (copies is empty);
  // reads and updates are requests to them (remote_variable.h).
  std::shared_ptr<RemoteVariable> remote;

  // A handle to this state (for variables that arrive in a closure).
  static Variable handle(std::shared_ptr<VariableState> state);
};

}  // namespace collective::distribute::detail
