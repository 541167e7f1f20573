#include "collective/distribute/parameter_server_strategy.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "collective/communicator.h"
#include "collective/errors.h"
#include "collective/in_tree/parameters.h"
#include "base/log.h"
#include "ps/ps_cluster.h"
#include "ps/ps_dispatcher.h"
#include "ps/ps_server.h"
#include "ps/ps_strategy_access.h"
#include "ps/ps_variable.h"
#include "ps/ps_worker.h"
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
                                   std::to_string(min_shard_bytes) + " and " +
                                   std::to_string(max_shards));
  }
  return [min_shard_bytes, max_shards](const Shape& shape, DataType dtype) {
    const auto bytes = static_cast<std::int64_t>(num_bytes(shape, dtype));
    return clamp_shards(std::min<std::int64_t>(max_shards, bytes / min_shard_bytes), shape);
  };
}

VariablePartitioner MaxSizePartitioner(std::int64_t max_shard_bytes, int max_shards) {
  if (max_shard_bytes < 1 || max_shards < 0) {
    throw InvalidArgumentError(
        "MaxSizePartitioner", -1,
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
    throw InvalidArgumentError(
        "ParameterServerStrategy", resolver.rank(),
        "num_local_replicas must be at least 1, got " + std::to_string(options.num_local_replicas));
  }
  auto impl = std::make_unique<detail::StrategyImpl>();
  impl->name = "ParameterServerStrategy";
  impl->num_workers = resolver.parameter_server_layout() ? resolver.num_workers() : 1;
  // Each worker reduces only across its own replicas (workers are
  // asynchronous): worker_index 0 everywhere, ReductionToOneDevice.
  impl->worker_index = 0;
  impl->num_local_replicas = options.num_local_replicas;
  const std::string task =
      "/job:" + resolver.task_type() + "/replica:0/task:" + std::to_string(resolver.task_id());
  for (int r = 0; r < options.num_local_replicas; ++r) {
    impl->worker_devices.push_back(task + "/device:CPU:" + std::to_string(r));
  }
  for (int p = 0; p < resolver.num_ps(); ++p) {
    impl->parameter_devices.push_back("/job:ps/replica:0/task:" + std::to_string(p) +
                                      "/device:CPU:0");
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
    throw InvalidArgumentError(
        "ParameterServerStrategy variable '" + state.name + "'", cluster.rank,
        "variables are created by the chief; on " + cluster.task_type + " " +
            std::to_string(cluster.task_id) +
            " the strategy has served and returned (check is_coordinator())");
  }
  if (cluster.shut_down) {
    throw InvalidArgumentError("ParameterServerStrategy variable '" + state.name + "'", 0,
                               "the cluster was shut down");
  }
  if (cluster.dispatcher) cluster.dispatcher->check_available();
  auto remote = std::make_shared<detail::PsVariable>();
  remote->cluster = cluster.shared_from_this();
  remote->id = cluster.next_variable_id.fetch_add(1);
  const std::int64_t rows = first_dim(initial.shape());
  int shards = 1;
  if (cluster.options->variable_partitioner && !initial.shape().empty()) {
    shards = cluster.options->variable_partitioner(initial.shape(), initial.dtype());
    if (shards < 1) {
      throw InvalidArgumentError(
          "ParameterServerStrategy variable '" + state.name + "'", 0,
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
      shard.ps = detail::ps_variable_of(*colocate_with)->shards.front().ps;
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
      std::memcpy(piece.raw_data(),
                  bytes + static_cast<std::size_t>(shard.row_begin) * remote->row_bytes,
                  piece.num_bytes());
    }
    detail::Writer writer;
    writer.tensor(piece);
    detail::Header header;
    header.op = detail::Op::kCreate;
    header.id = shard.id;
    cluster.client->request(shard.ps, header, writer.take(),
                            "creating variable '" + state.name + "'");
  }
  state.remote = std::move(remote);
  state.copies.clear();
}

}  // namespace

namespace detail {

namespace {

// COLLECTIVE_PS_FAILURE_TIMEOUT: seconds, a plain decimal number > 0 and at
// most 10^6, read by the library's parameter reader (strict: "3s" or "inf" is
// an error naming the variable).
std::chrono::milliseconds failure_timeout_from(const ParameterServerOptions& options, int rank) {
  double seconds = 30;
  if (options.failure_timeout_seconds) {
    seconds = *options.failure_timeout_seconds;
    if (!(std::isfinite(seconds) && seconds > 0 && seconds <= 1e6)) {
      throw InvalidArgumentError("ParameterServerStrategy", rank,
                                 "ParameterServerOptions::failure_timeout_seconds must be a number "
                                 "of seconds in (0, 1e6], not " +
                                     std::to_string(seconds));
    }
  } else {
    try {
      seconds = seconds_parameter("COLLECTIVE_PS_FAILURE_TIMEOUT", 1e6).value_or(seconds);
    } catch (const InvalidArgumentError& error) {
      throw InvalidArgumentError("ParameterServerStrategy", rank, error.cause());
    }
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(seconds * 1000)));
}

// Every rank's registry as one string: "name\x01" (function) or
// "name\x02" (dataset function), in order.
std::string registry_signature(const RemoteFunctions& functions) {
  std::string signature;
  for (std::uint32_t i = 0; i < functions.size(); ++i) {
    signature += functions.name(i);
    signature += functions.is_dataset(i) ? '\x02' : '\x01';
  }
  return signature;
}

std::vector<std::string> split_signature(const std::string& signature) {
  std::vector<std::string> names;
  std::string current;
  for (char c : signature) {
    if (c == '\x01' || c == '\x02') {
      names.push_back(current + (c == '\x02' ? " (dataset function)" : ""));
      current.clear();
    } else {
      current += c;
    }
  }
  return names;
}

// Every rank must have registered the same functions in the same order;
// the error names the first difference from the chief's list.
void check_registries_agree(Communicator& comm, const RemoteFunctions& functions) {
  const std::string mine = registry_signature(functions);
  std::int64_t length = static_cast<std::int64_t>(mine.size());
  AllReduceOptions max;
  max.op = ReduceOp::kMax;
  comm.all_reduce(&length, &length, 1, DataType::kInt64, max);
  std::vector<std::uint8_t> slot(static_cast<std::size_t>(length) + 1, 0);
  std::memcpy(slot.data(), mine.data(), mine.size());
  std::vector<std::uint8_t> all(slot.size() * static_cast<std::size_t>(comm.size()));
  comm.all_gather(slot.data(), all.data(), slot.size(), DataType::kUInt8);
  const auto signature_of = [&](int r) {
    const char* p =
        reinterpret_cast<const char*>(all.data() + slot.size() * static_cast<std::size_t>(r));
    return std::string(p, strnlen(p, slot.size()));
  };
  const std::vector<std::string> chief = split_signature(signature_of(0));
  for (int r = 1; r < comm.size(); ++r) {
    const std::vector<std::string> other = split_signature(signature_of(r));
    if (other == chief) continue;
    std::size_t i = 0;
    while (i < chief.size() && i < other.size() && chief[i] == other[i]) ++i;
    const auto at = [](const std::vector<std::string>& names, std::size_t k) {
      return k < names.size() ? "'" + names[k] + "'" : std::string("nothing");
    };
    throw MismatchError("ParameterServerStrategy", comm.rank(),
                        "the ranks registered different worker functions: function " +
                            std::to_string(i) + " is " + at(chief, i) +
                            " on the chief (rank 0) but " + at(other, i) + " on rank " +
                            std::to_string(r) +
                            "; register the same functions in the same order on every rank "
                            "before constructing the strategy");
  }
}

// ParameterServerOptions::same_node_shared_memory, else
// COLLECTIVE_PS_SHARED_MEMORY (a switch), else on.
bool same_node_shared_memory_from(const ParameterServerOptions& options, int rank) {
  if (options.same_node_shared_memory) return *options.same_node_shared_memory;
  try {
    return switch_parameter("COLLECTIVE_PS_SHARED_MEMORY").value_or(true);
  } catch (const InvalidArgumentError& error) {
    throw InvalidArgumentError("ParameterServerStrategy", rank, error.cause());
  }
}

}  // namespace

// The cluster made from the resolver, the registered functions and the
// options: the options checked, the timeouts and the staging switch
// resolved, the ranks' registries compared, the wire opened.
std::shared_ptr<PsCluster> make_ps_cluster(const MPIClusterResolver& resolver,
                                           const RemoteFunctions& registry,
                                           ParameterServerOptions opts) {
  auto cluster = std::make_shared<PsCluster>();
  cluster->functions = std::make_shared<const RemoteFunctions>(registry);
  cluster->options = std::make_shared<const ParameterServerOptions>(std::move(opts));
  const ParameterServerOptions& options = *cluster->options;
  PsCluster& c = *cluster;
  if (!resolver.parameter_server_layout()) {
    throw InvalidArgumentError(
        "ParameterServerStrategy", resolver.rank(),
        "the resolver has the all-workers layout; construct it as "
        "MPIClusterResolver(communicator, num_ps) (or set COLLECTIVE_NUM_PS)");
  }
  if (options.closures_in_flight_per_worker < 1) {
    throw InvalidArgumentError("ParameterServerStrategy", resolver.rank(),
                               "closures_in_flight_per_worker must be at least 1, got " +
                                   std::to_string(options.closures_in_flight_per_worker));
  }
  c.closures_in_flight_per_worker = options.closures_in_flight_per_worker;
  c.failure_timeout = failure_timeout_from(options, resolver.rank());
  c.same_node_shared_memory = same_node_shared_memory_from(options, resolver.rank());
  c.heartbeat_interval = std::clamp(c.failure_timeout / 10, std::chrono::milliseconds(10),
                                    std::chrono::milliseconds(1000));
  c.rank = resolver.rank();
  c.num_ps = resolver.num_ps();
  c.num_workers = resolver.num_workers();
  c.task_type = resolver.task_type();
  c.task_id = resolver.task_id();
  const int handle = options.mpi_communicator.value_or(mpi_world_handle());
  Communicator comm = Communicator::from_mpi(handle);
  if (comm.size() != resolver.num_ps() + resolver.num_workers() + 1 || comm.rank() != c.rank) {
    throw InvalidArgumentError("ParameterServerStrategy", c.rank,
                               "the resolver describes a different communicator than "
                               "ParameterServerOptions::mpi_communicator");
  }
  check_registries_agree(comm, *c.functions);
  c.wire = std::make_unique<Wire>(handle);
  c.client = std::make_unique<PsClient>(*c.wire, c.rank, c.num_ps, c.failure_timeout,
                                        c.same_node_shared_memory);
  if (c.task_type != "ps") {
    int near = 0;
    for (int ps = 0; ps < c.num_ps; ++ps) near += c.wire->same_node(c.ps_rank(ps)) ? 1 : 0;
    DISTRIBUTE_LOG(kInfo, "ParameterServerStrategy rank "
                              << c.rank << ": " << near << " of " << c.num_ps
                              << " ps tasks on this node; payloads above "
                              << (Wire::kInlineBytes >> 10) << " KiB to them go through "
                              << (c.same_node_shared_memory ? "shared memory"
                                                            : "MPI messages (shared memory off)")
                              << ", to the others through MPI messages");
  }
  return cluster;
}

}  // namespace detail

ParameterServerStrategy::ParameterServerStrategy(const MPIClusterResolver& resolver,
                                                 const RemoteFunctions& functions,
                                                 ParameterServerOptions options)
    : Strategy(make_parameter_server(resolver, options)) {
  cluster_ = detail::make_ps_cluster(resolver, functions, std::move(options));
  detail::StrategyImpl& impl = extended().impl();
  cluster_->strategy_serial = impl.serial;
  cluster_->strategy_label = impl.label();
  cluster_->strategy = this;
  detail::PsCluster* cluster = cluster_.get();
  detail::StrategyImpl* owner = &impl;
  impl.place_variable = [cluster, owner](detail::VariableState& state, const Tensor& initial) {
    const detail::VariableState* colocate = owner->colocate_with.get();
    place_variable(*cluster, state, initial,
                   colocate != nullptr && colocate->remote &&
                           !detail::ps_variable_of(*colocate)->shards.empty()
                       ? colocate
                       : nullptr);
  };
  if (cluster_->task_type == "ps") {
    DISTRIBUTE_LOG(
        kInfo, "ParameterServerStrategy: " << cluster_->ps_label(cluster_->task_id) << " serving");
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

namespace detail {

PsCluster& cluster_of(const ParameterServerStrategy& strategy) { return strategy.cluster(); }
bool coordinates(const ParameterServerStrategy& strategy) { return strategy.is_coordinator(); }

}  // namespace detail
const MPIClusterResolver& ParameterServerStrategy::resolver() const {
  return *extended().impl().cluster_resolver;
}
int ParameterServerStrategy::num_ps() const { return cluster_->num_ps; }
int ParameterServerStrategy::num_workers() const { return cluster_->num_workers; }
void ParameterServerStrategy::shutdown() { cluster_->shutdown(); }

std::vector<VariableShard> ParameterServerStrategy::shards(const Variable& variable) const {
  const detail::VariableState& state = variable.state();
  if (!state.remote || detail::ps_variable_of(state)->cluster != cluster_) {
    throw InvalidArgumentError("ParameterServerStrategy::shards", cluster_->rank,
                               "variable '" + state.name + "' does not belong to this strategy");
  }
  std::vector<VariableShard> result;
  for (const detail::ShardPlacement& shard : detail::ps_variable_of(state)->shards) {
    result.push_back(VariableShard{shard.ps, shard.row_begin, shard.rows});
  }
  return result;
}

}  // namespace collective::distribute
