// The variables of a ParameterServerStrategy: their shards on the ps tasks,
// reads and updates as requests to them, and their descriptor in closures.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "collective/distribute/tensor.h"
#include "core/remote_variable.h"
#include "core/variable_state.h"
#include "ps/ps_cluster.h"
#include "ps/ps_wire.h"

namespace collective::distribute::detail {

// One piece of a variable on one ps: rows [row_begin, row_begin + rows) of
// the first axis (the whole variable when unsharded).
struct ShardPlacement {
  int ps = 0;
  std::uint64_t id = 0;  // the shard's id on its ps (unique in the cluster)
  std::int64_t row_begin = 0;
  std::int64_t rows = 0;
};

// A variable whose value lives on ps tasks, in shards.
struct PsVariable final : RemoteVariable {
  std::shared_ptr<PsCluster> cluster;
  std::uint64_t id = 0;
  std::vector<ShardPlacement> shards;
  std::size_t row_bytes = 0;  // bytes of one row of the first axis (the whole for scalars)

  Tensor read(const VariableState& state) const override;
  void update(const VariableState& state, const Tensor& value, int sign) const override;
  void sgd(const VariableState& state, const Tensor& gradient, double learning_rate) const override;
  // One request per shard: kAssign, kAdd, kSubtract, kSgd (scalar = learning rate).
  void send_update(const VariableState& state, Op op, const Tensor& value, double scalar) const;
};

// The parameter-server variable behind state (state.remote set; only this
// module sets it, so every remote variable is one).
const PsVariable* ps_variable_of(const VariableState& state);

// Descriptor of a variable as closures carry it.
void write_variable(Writer& writer, const VariableState& state);
std::shared_ptr<VariableState> read_variable(Reader& reader,
                                             const std::shared_ptr<PsCluster>& cluster);

}  // namespace collective::distribute::detail
