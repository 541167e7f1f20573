// The few entry points Variable and SGD need for parameter-server variables
// (VariableState::remote set), kept apart so that they do not depend on the
// parameter-server machinery (ps_cluster.h).
#pragma once

#include "collective/distribute/tensor.h"

namespace collective::distribute::detail {

struct VariableState;

// The current value, fetched from the ps tasks.
Tensor remote_read(const VariableState& state);
// sign 0: assign; +1: assign_add; -1: assign_sub. Atomic per shard on its ps.
void remote_update(const VariableState& state, const Tensor& value, int sign);
// variable -= learning_rate * gradient, on the ps, atomic per shard.
void remote_sgd(const VariableState& state, const Tensor& gradient, double learning_rate);

}  // namespace collective::distribute::detail
