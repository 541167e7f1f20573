#include "collective/distribute/parameter_server_strategy.h"

#include <algorithm>
#include <cstring>

#include "collective/errors.h"
#include "base/log.h"
#include "ps/ps_cluster.h"
#include "core/strategy_impl.h"

namespace collective::distribute {

// ---- partitioners (TF's, along the first axis) -------------------------

namespace {

std::int64_t first_dim(const Shape& shape) { return shape.empty() ? 1 : shape[0]; }

int clamp_shards(std::int64_t shards, const Shape& shape) {
  return static_cast<int>(std::max<std::int64_t>(1, std::min(shards, first_dim(shape))));
}

}  // namespace

VariablePartitioner FixedShardsPartitioner(int num_shards) {
  if (num_shards < 1) {
    throw InvalidArgumentError("FixedShardsPartitioner", -1,
                               "num_shards must be at least 1, got " + std::to_string(num_shards));
  }
  return [num_shards](const Shape& shape, DataType) { return clamp_shards(num_shards, shape); };
}

VariablePartitioner MinSizePartitioner(std::int64_t min_shard_bytes, int max_shards) {
  if (min_shard_bytes < 1 || max_shards < 1) {
    throw InvalidArgumentError("MinSizePartitioner", -1,
                               "min_shard_bytes and max_shards must be at least 1, got " +
                                   std::to_string(min_shard_bytes) + " and " + std::to_string(max_shards));
  }
  return [min_shard_bytes, max_shards](const Shape& shape, DataType dtype) {
    const auto bytes = static_cast<std::int64_t>(num_bytes(shape, dtype));
    return clamp_shards(std::min<std::int64_t>(max_shards, bytes / min_shard_bytes), shape);
  };
}

VariablePartitioner MaxSizePartitioner(std::int64_t max_shard_bytes, int max_shards) {
  if (max_shard_bytes < 1 || max_shards < 0) {
    throw InvalidArgumentError("MaxSizePartitioner", -1,
                               "max_shard_bytes must be at least 1 and max_shards at least 0, got " +
                                   std::to_string(max_shard_bytes) + " and " + std::to_string(max_shards));
  }
  return [max_shard_bytes, max_shards](const Shape& shape, DataType dtype) {
    const auto bytes = static_cast<std::int64_t>(num_bytes(shape, dtype));
    std::int64_t shards = (bytes + max_shard_bytes - 1) / max_shard_bytes;
    if (max_shards > 0) shards = std::min<std::int64_t>(shards, max_shards);
    return clamp_shards(shards, shape);
  };
}

// ---- the strategy ------------------------------------------------------

namespace {

std::unique_ptr<StrategyExtended> make_parameter_server(const MPIClusterResolver& resolver,
                                                        const ParameterServerOptions& options) {
  if (options.num_local_replicas < 1) {
    throw InvalidArgumentError("ParameterServerStrategy", resolver.rank(),
                               "num_local_replicas must be at least 1, got " +
                                   std::to_string(options.num_local_replicas));
  }
  auto impl = std::make_unique<detail::StrategyImpl>();
  impl->name = "ParameterServerStrategy";
  impl->num_workers = resolver.parameter_server_layout() ? resolver.num_workers() : 1;
  // Each worker reduces only across its own replicas (workers are
  // asynchronous): worker_index 0 everywhere, ReductionToOneDevice.
  impl->worker_index = 0;
  impl->num_local_replicas = options.num_local_replicas;
  const std::string task = "/job:" + resolver.task_type() + "/replica:0/task:" + std::to_string(resolver.task_id());
  for (int r = 0; r < options.num_local_replicas; ++r) {
    impl->worker_devices.push_back(task + "/device:CPU:" + std::to_string(r));
  }
  for (int p = 0; p < resolver.num_ps(); ++p) {
    impl->parameter_devices.push_back("/job:ps/replica:0/task:" + std::to_string(p) + "/device:CPU:0");
  }
  impl->cluster_resolver = std::make_unique<MPIClusterResolver>(resolver);
  impl->finish_setup();
  return std::make_unique<StrategyExtended>(std::move(impl));
}

// Places a new variable: split along the first axis into the partitioner's
// number of shards (sizes differ by at most one row, the first shards
// larger, as TF splits), each on the next ps in round-robin order, and
// created there with its initial rows.
void place_variable(detail::PsCluster& cluster, detail::VariableState& state, const Tensor& initial,
                    const detail::VariableState* colocate_with) {
  if (cluster.task_type != "chief") {
    throw InvalidArgumentError("ParameterServerStrategy variable '" + state.name + "'", cluster.rank,
                               "variables are created by the chief; on " + cluster.task_type + " " +
                                   std::to_string(cluster.task_id) +
                                   " the strategy has served and returned (check is_coordinator())");
  }
  if (cluster.shut_down) {
    throw InvalidArgumentError("ParameterServerStrategy variable '" + state.name + "'", 0,
                               "the cluster was shut down");
  }
  if (cluster.dispatcher) cluster.dispatcher->check_available();
  auto remote = std::make_shared<detail::RemoteVariable>();
  remote->cluster = cluster.shared_from_this();
  remote->id = cluster.next_variable_id.fetch_add(1);
  const std::int64_t rows = first_dim(initial.shape());
  int shards = 1;
  if (cluster.options.variable_partitioner && !initial.shape().empty()) {
    shards = cluster.options.variable_partitioner(initial.shape(), initial.dtype());
    if (shards < 1) {
      throw InvalidArgumentError("ParameterServerStrategy variable '" + state.name + "'", 0,
                                 "the variable partitioner returned " + std::to_string(shards) + " shards");
    }
    shards = static_cast<int>(std::min<std::int64_t>(shards, std::max<std::int64_t>(rows, 1)));
  }
  remote->row_bytes = rows == 0 ? 0 : initial.num_bytes() / static_cast<std::size_t>(rows);
  std::int64_t begin = 0;
  for (int s = 0; s < shards; ++s) {
    detail::ShardPlacement shard;
    shard.rows = rows / shards + (s < rows % shards ? 1 : 0);
    shard.row_begin = begin;
    begin += shard.rows;
    if (colocate_with != nullptr) {
      // StrategyExtended::colocate_vars_with: every shard on the ps of the
      // given variable's first shard; the round robin does not advance.
      shard.ps = colocate_with->remote->shards.front().ps;
    } else {
      shard.ps = cluster.next_ps;
      cluster.next_ps = (cluster.next_ps + 1) % cluster.num_ps;
    }
    shard.id = cluster.next_shard_id.fetch_add(1);
    remote->shards.push_back(shard);
  }
  const auto* bytes = static_cast<const std::byte*>(initial.raw_data());
  for (const detail::ShardPlacement& shard : remote->shards) {
    Shape shard_shape = initial.shape();
    if (!shard_shape.empty()) shard_shape[0] = shard.rows;
    Tensor piece(initial.dtype(), shard_shape);
    if (piece.num_bytes() > 0) {
      std::memcpy(piece.raw_data(), bytes + static_cast<std::size_t>(shard.row_begin) * remote->row_bytes,
                  piece.num_bytes());
    }
    detail::Writer writer;
    writer.tensor(piece);
    detail::Header header;
    header.op = detail::Op::kCreate;
    header.id = shard.id;
    cluster.request(shard.ps, header, writer.take(), "creating variable '" + state.name + "'");
  }
  state.remote = std::move(remote);
  state.copies.clear();
}

}  // namespace

ParameterServerStrategy::ParameterServerStrategy(const MPIClusterResolver& resolver,
                                                 const RemoteFunctions& functions,
                                                 ParameterServerOptions options)
    : Strategy(make_parameter_server(resolver, options)) {
  cluster_ = std::make_shared<detail::PsCluster>(resolver, functions, std::move(options));
  detail::StrategyImpl& impl = extended().impl();
  cluster_->strategy_serial = impl.serial;
  cluster_->strategy_label = impl.label();
  cluster_->strategy = this;
  detail::PsCluster* cluster = cluster_.get();
  detail::StrategyImpl* owner = &impl;
  impl.place_variable = [cluster, owner](detail::VariableState& state, const Tensor& initial) {
    const detail::VariableState* colocate = owner->colocate_with.get();
    place_variable(*cluster, state, initial,
                   colocate != nullptr && colocate->remote && !colocate->remote->shards.empty()
                       ? colocate
                       : nullptr);
  };
  if (cluster_->task_type == "ps") {
    DISTRIBUTE_LOG(kInfo, "ParameterServerStrategy: " << cluster_->ps_label(cluster_->task_id) << " serving");
    // Servers leave their duplicate communicator to MPI_Finalize: freeing it
    // after a peer was killed (mpirun --enable-recovery) made Open MPI 4.1's
    // finalize hang now and then; the chief frees its own only when every
    // peer said bye.
    (void)detail::serve_parameters(cluster_);
  } else if (cluster_->task_type == "worker") {
    DISTRIBUTE_LOG(kInfo, "ParameterServerStrategy: " << cluster_->worker_label(cluster_->task_id)
                                                      << " serving");
    (void)detail::serve_closures(cluster_);
  } else {
    cluster_->dispatcher = std::make_unique<detail::Dispatcher>(*cluster_);
  }
}

ParameterServerStrategy::~ParameterServerStrategy() {
  if (cluster_) cluster_->shutdown();
}

bool ParameterServerStrategy::is_coordinator() const { return cluster_->task_type == "chief"; }
const MPIClusterResolver& ParameterServerStrategy::resolver() const {
  return *extended().impl().cluster_resolver;
}
int ParameterServerStrategy::num_ps() const { return cluster_->num_ps; }
int ParameterServerStrategy::num_workers() const { return cluster_->num_workers; }
void ParameterServerStrategy::shutdown() { cluster_->shutdown(); }

std::vector<VariableShard> ParameterServerStrategy::shards(const Variable& variable) const {
  const detail::VariableState& state = variable.state();
  if (!state.remote || state.remote->cluster != cluster_) {
    throw InvalidArgumentError("ParameterServerStrategy::shards", cluster_->rank,
                               "variable '" + state.name + "' does not belong to this strategy");
  }
  std::vector<VariableShard> result;
  for (const detail::ShardPlacement& shard : state.remote->shards) {
    result.push_back(VariableShard{shard.ps, shard.row_begin, shard.rows});
  }
  return result;
}

}  // namespace collective::distribute
