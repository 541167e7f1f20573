#include "ps/ps_variable.h"

#include <cstring>

#include "collective/errors.h"

namespace collective::distribute::detail {

Tensor PsVariable::read(const VariableState& state) const {
  Tensor result(state.dtype, state.shape);
  auto* out = static_cast<std::byte*>(result.raw_data());
  for (const ShardPlacement& shard : shards) {
    Header header;
    header.op = Op::kRead;
    header.id = shard.id;
    const std::string what = "reading variable '" + state.name + "'";
    const std::size_t bytes = static_cast<std::size_t>(shard.rows) * row_bytes;
    if (cluster->client->stages(shard.ps, bytes)) {
      cluster->client->staged_request(shard.ps, header, nullptr,
                                      out + static_cast<std::size_t>(shard.row_begin) * row_bytes,
                                      bytes, what);
      continue;
    }
    Message reply = cluster->client->request(shard.ps, header, {}, what);
    if (reply.payload.size() != bytes) {
      throw CommunicationError(what, cluster->rank,
                               cluster->ps_label(shard.ps) + " sent " +
                                   std::to_string(reply.payload.size()) + " bytes for a shard of " +
                                   std::to_string(bytes));
    }
    if (bytes > 0)
      std::memcpy(out + static_cast<std::size_t>(shard.row_begin) * row_bytes, reply.payload.data(),
                  bytes);
  }
  return result;
}

void PsVariable::send_update(const VariableState& state, Op op, const Tensor& value,
                             double scalar) const {
  const auto* in = static_cast<const std::byte*>(value.raw_data());
  for (const ShardPlacement& shard : shards) {
    Header header;
    header.op = op;
    header.id = shard.id;
    header.scalar = scalar;
    const std::size_t begin = static_cast<std::size_t>(shard.row_begin) * row_bytes;
    const std::size_t bytes = static_cast<std::size_t>(shard.rows) * row_bytes;
    if (cluster->client->stages(shard.ps, bytes)) {
      cluster->client->staged_request(shard.ps, header, in + begin, nullptr, bytes,
                                      "updating variable '" + state.name + "'");
      continue;
    }
    Bytes payload(in + begin, in + begin + static_cast<std::size_t>(shard.rows) * row_bytes);
    cluster->client->request(shard.ps, header, std::move(payload),
                             "updating variable '" + state.name + "'");
  }
}

void PsVariable::update(const VariableState& state, const Tensor& value, int sign) const {
  send_update(state, sign == 0 ? Op::kAssign : sign > 0 ? Op::kAdd : Op::kSubtract, value, 0);
}

void PsVariable::sgd(const VariableState& state, const Tensor& gradient,
                     double learning_rate) const {
  send_update(state, Op::kSgd, gradient, learning_rate);
}

const PsVariable* ps_variable_of(const VariableState& state) {
  return static_cast<const PsVariable*>(state.remote.get());
}

void write_variable(Writer& writer, const VariableState& state) {
  const PsVariable& remote = *ps_variable_of(state);
  writer.u64(remote.id);
  writer.str(state.name);
  writer.u32(static_cast<std::uint32_t>(state.aggregation));
  writer.u32(state.trainable ? 1 : 0);
  writer.u32(static_cast<std::uint32_t>(state.dtype));
  writer.u32(static_cast<std::uint32_t>(state.shape.size()));
  for (std::int64_t d : state.shape) writer.i64(d);
  writer.u32(static_cast<std::uint32_t>(remote.shards.size()));
  for (const ShardPlacement& shard : remote.shards) {
    writer.u32(static_cast<std::uint32_t>(shard.ps));
    writer.u64(shard.id);
    writer.i64(shard.row_begin);
    writer.i64(shard.rows);
  }
}

std::shared_ptr<VariableState> read_variable(Reader& reader,
                                             const std::shared_ptr<PsCluster>& cluster) {
  auto remote = std::make_shared<PsVariable>();
  remote->cluster = cluster;
  remote->id = reader.u64();
  auto state = std::make_shared<VariableState>();
  state->name = reader.str();
  state->aggregation = static_cast<VariableAggregation>(reader.u32());
  state->trainable = reader.u32() != 0;
  state->dtype = static_cast<DataType>(reader.u32());
  state->shape.resize(reader.u32());
  for (auto& d : state->shape) d = reader.i64();
  remote->shards.resize(reader.u32());
  for (ShardPlacement& shard : remote->shards) {
    shard.ps = static_cast<int>(reader.u32());
    shard.id = reader.u64();
    shard.row_begin = reader.i64();
    shard.rows = reader.i64();
  }
  std::lock_guard<std::mutex> lock(cluster->variables_mutex);
  if (auto known = cluster->variables[remote->id].lock()) return known;
  const std::size_t elements = num_elements(state->shape);
  const std::size_t rows = state->shape.empty() ? 1 : static_cast<std::size_t>(state->shape[0]);
  remote->row_bytes = rows == 0 ? 0 : elements / rows * element_size(state->dtype);
  state->strategy_serial = cluster->strategy_serial;
  state->strategy_name = "ParameterServerStrategy";
  state->strategy_label = cluster->strategy_label;
  const std::uint64_t id = remote->id;
  state->remote = std::move(remote);
  cluster->variables[id] = state;
  return state;
}

}  // namespace collective::distribute::detail
