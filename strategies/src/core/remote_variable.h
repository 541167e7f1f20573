// A variable whose value lives elsewhere (VariableState::remote set): what
// Variable and SGD ask of it. An interface that the parameter-server module
// implements (ps/ps_variable.h), so that core does not depend on that
// module.
#pragma once

#include "collective/distribute/tensor.h"

namespace collective::distribute::detail {

struct VariableState;

class RemoteVariable {
 public:
  virtual ~RemoteVariable() = default;
  // The current value, fetched from where it lives.
  virtual Tensor read(const VariableState& state) const = 0;
  // sign 0: assign; +1: assign_add; -1: assign_sub. Atomic per shard.
  virtual void update(const VariableState& state, const Tensor& value, int sign) const = 0;
  // variable -= learning_rate * gradient, where it lives, atomic per shard.
  virtual void sgd(const VariableState& state, const Tensor& gradient,
                   double learning_rate) const = 0;
};

}  // namespace collective::distribute::detail
