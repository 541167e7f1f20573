#include "ps_cluster.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "collective/communicator.h"
#include "collective/errors.h"
#include "collective/in_tree/parameters.h"
#include "log.h"
#include "remote_variable_ops.h"

namespace collective::distribute::detail {

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
                                 "of seconds in (0, 1e6], not " + std::to_string(seconds));
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
    const char* p = reinterpret_cast<const char*>(all.data() + slot.size() * static_cast<std::size_t>(r));
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
                            std::to_string(i) + " is " + at(chief, i) + " on the chief (rank 0) but " +
                            at(other, i) + " on rank " + std::to_string(r) +
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

void RemoteValueState::finish(RemoteValue::Status new_status, Tensor result) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (status != RemoteValue::Status::kPending) return;
    status = new_status;
    value = std::move(result);
  }
  changed.notify_all();
}

void RemoteValueState::fail(RemoteValue::Status new_status, std::string operation, int rank,
                            std::string cause, bool is_unavailable) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (status != RemoteValue::Status::kPending) return;
    status = new_status;
    error_operation = std::move(operation);
    error_rank = rank;
    error_cause = std::move(cause);
    unavailable = is_unavailable;
  }
  changed.notify_all();
}

PsCluster::PsCluster(const MPIClusterResolver& resolver, const RemoteFunctions& registry,
                     ParameterServerOptions opts)
    : functions(registry), options(std::move(opts)) {
  if (!resolver.parameter_server_layout()) {
    throw InvalidArgumentError("ParameterServerStrategy", resolver.rank(),
                               "the resolver has the all-workers layout; construct it as "
                               "MPIClusterResolver(communicator, num_ps) (or set COLLECTIVE_NUM_PS)");
  }
  if (options.closures_in_flight_per_worker < 1) {
    throw InvalidArgumentError("ParameterServerStrategy", resolver.rank(),
                               "closures_in_flight_per_worker must be at least 1, got " +
                                   std::to_string(options.closures_in_flight_per_worker));
  }
  failure_timeout = failure_timeout_from(options, resolver.rank());
  same_node_shared_memory = same_node_shared_memory_from(options, resolver.rank());
  heartbeat_interval = std::clamp(failure_timeout / 10, std::chrono::milliseconds(10),
                                  std::chrono::milliseconds(1000));
  rank = resolver.rank();
  num_ps = resolver.num_ps();
  num_workers = resolver.num_workers();
  task_type = resolver.task_type();
  task_id = resolver.task_id();
  const int handle = options.mpi_communicator.value_or(mpi_world_handle());
  Communicator comm = Communicator::from_mpi(handle);
  if (comm.size() != resolver.num_ps() + resolver.num_workers() + 1 || comm.rank() != rank) {
    throw InvalidArgumentError("ParameterServerStrategy", rank,
                               "the resolver describes a different communicator than "
                               "ParameterServerOptions::mpi_communicator");
  }
  check_registries_agree(comm, functions);
  wire = std::make_unique<Wire>(handle);
  if (task_type != "ps") {
    int near = 0;
    for (int ps = 0; ps < num_ps; ++ps) near += wire->same_node(ps_rank(ps)) ? 1 : 0;
    DISTRIBUTE_LOG(kInfo, "ParameterServerStrategy rank " << rank << ": " << near << " of " << num_ps
                               << " ps tasks on this node; payloads above " << (Wire::kInlineBytes >> 10)
                               << " KiB to them go through "
                               << (same_node_shared_memory ? "shared memory" : "MPI messages (shared memory off)")
                               << ", to the others through MPI messages");
  }
}

PsCluster::~PsCluster() = default;

Message PsCluster::staged_request(int ps, Header header, const std::byte* in, std::byte* out,
                                  std::size_t bytes, const std::string& what) {
  std::unique_lock<std::mutex> lock(client_mutex);
  Staging& staging_of_ps = staging[ps];
  if (!staging_of_ps.segment || staging_of_ps.segment->size() < bytes) {
    // A new generation, sized to the next power of two so that a growing
    // variable does not remake it every time.
    std::size_t capacity = std::size_t{1} << 20;
    while (capacity < bytes) capacity *= 2;
    const std::uint64_t generation = next_generation++;
    staging_of_ps.segment.reset();
    staging_of_ps.segment = StagingSegment::create(
        StagingSegment::name(wire->job_token(), rank, ps_rank(ps), generation), capacity, what, rank);
    staging_of_ps.generation = generation;
  }
  if (in != nullptr) std::memcpy(staging_of_ps.segment->data(), in, bytes);
  // The request message orders these stores before the ps's loads (and
  // the reply the ps's stores before ours); the fences say so explicitly.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  header.staged_generation = staging_of_ps.generation;
  header.staged_bytes = bytes;
  Message reply = request_locked(ps, header, {}, what);
  staged_requests.fetch_add(1);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (out != nullptr) {
    if (reply.header.staged_bytes != bytes) {
      throw CommunicationError(what, rank,
                               ps_label(ps) + " staged " + std::to_string(reply.header.staged_bytes) +
                                   " bytes for a shard of " + std::to_string(bytes));
    }
    std::memcpy(out, staging_of_ps.segment->data(), bytes);
  }
  return reply;
}

Message PsCluster::request(int ps, Header header, Bytes payload, const std::string& what) {
  std::lock_guard<std::mutex> lock(client_mutex);
  return request_locked(ps, header, std::move(payload), what);
}

Message PsCluster::request_locked(int ps, Header header, Bytes payload, const std::string& what) {
  if (ps < 0 || ps >= num_ps) {
    throw InvalidArgumentError(what, rank, "no ps " + std::to_string(ps));
  }
  if (shut_down) {
    throw InvalidArgumentError(what, rank,
                               "the parameter-server cluster was shut down (its strategy was "
                               "destroyed or shutdown() was called)");
  }
  header.seq = next_sequence++;
  const int destination = ps_rank(ps);
  wire->send(destination, kTagRequest, header, std::move(payload));
  const Clock::time_point deadline = Clock::now() + failure_timeout;
  for (int round = 0;; ++round) {
    std::optional<Message> reply = wire->poll(destination, kTagReply, deadline, what);
    if (reply && reply->header.seq == header.seq) {
      if (reply->header.status != Status::kOk) {
        throw CommunicationError(what, rank,
                                 ps_label(ps) + " refused: " +
                                     std::string(reinterpret_cast<const char*>(reply->payload.data()),
                                                 reply->payload.size()));
      }
      wire->progress();
      return std::move(*reply);
    }
    if (reply) continue;  // the reply to an earlier request that timed out
    if (Clock::now() > deadline) {
      throw UnavailableError(
          what, rank,
          ps_label(ps) + " did not answer within the failure timeout (" +
              seconds_text(failure_timeout) +
              ", COLLECTIVE_PS_FAILURE_TIMEOUT); the ps task is unavailable");
    }
    if ((round & 63) == 0) wire->progress();
    idle_pause(round, kReplyYieldRounds);
  }
}

void PsCluster::shutdown() noexcept {
  if (shut_down || task_type != "chief") return;
  shut_down = true;
  try {
    std::vector<bool> workers_alive(static_cast<std::size_t>(num_workers), true);
    if (dispatcher) {
      dispatcher->stop();
      workers_alive = dispatcher->workers_alive();
    }
    // Workers first (they may still talk to ps tasks), then the ps tasks;
    // each answers bye. A peer that stays silent for the failure timeout
    // is left behind with a warning.
    bool everyone = true;
    // Workers already declared failed are sent the shutdown (a stopped one
    // may resume) but not waited for.
    const auto farewell = [&](int first_rank, int count, const char* kind, const std::vector<bool>& waited) {
      for (int r = first_rank; r < first_rank + count; ++r) {
        Header header;
        header.op = Op::kShutdown;
        wire->send(r, kTagControl, header, {});
      }
      std::vector<bool> said_bye(static_cast<std::size_t>(count), false);
      int missing = 0;
      for (int i = 0; i < count; ++i) {
        if (waited[static_cast<std::size_t>(i)]) {
          ++missing;
        } else {
          said_bye[static_cast<std::size_t>(i)] = true;
          everyone = false;
        }
      }
      const Clock::time_point deadline = Clock::now() + failure_timeout;
      for (int round = 0; missing > 0 && Clock::now() < deadline; ++round) {
        bool any = false;
        while (std::optional<Message> m = wire->poll(-1, kTagResult, deadline, "a bye")) {
          any = true;
          const int index = m->source - first_rank;
          if (m->header.op == Op::kBye && index >= 0 && index < count &&
              !said_bye[static_cast<std::size_t>(index)]) {
            said_bye[static_cast<std::size_t>(index)] = true;
            --missing;
          }
        }
        while (wire->poll(-1, kTagHeartbeat, deadline, "a heartbeat")) any = true;
        wire->progress();
        if (!any) idle_pause(round);
      }
      for (int i = 0; i < count; ++i) {
        if (!said_bye[static_cast<std::size_t>(i)]) {
          everyone = false;
          DISTRIBUTE_LOG(kWarn, "ParameterServerStrategy shutdown: " << kind << " " << i << " (rank "
                                    << first_rank + i << ") did not answer the shutdown within "
                                    << std::chrono::duration<double>(failure_timeout).count()
                                    << " s; leaving it behind");
        }
      }
    };
    farewell(worker_rank(0), num_workers, "worker", workers_alive);
    farewell(ps_rank(0), num_ps, "ps", std::vector<bool>(static_cast<std::size_t>(num_ps), true));
    wire->flush(Clock::now() + failure_timeout);
    if (everyone) wire->release();
  } catch (const std::exception& error) {
    DISTRIBUTE_LOG(kWarn, "ParameterServerStrategy shutdown failed: " << error.what());
  }
}

// ---- variables ---------------------------------------------------------

Tensor RemoteVariable::read(const VariableState& state) const {
  Tensor result(state.dtype, state.shape);
  auto* out = static_cast<std::byte*>(result.raw_data());
  for (const ShardPlacement& shard : shards) {
    Header header;
    header.op = Op::kRead;
    header.id = shard.id;
    const std::string what = "reading variable '" + state.name + "'";
    const std::size_t bytes = static_cast<std::size_t>(shard.rows) * row_bytes;
    if (cluster->stages(shard.ps, bytes)) {
      cluster->staged_request(shard.ps, header, nullptr, out + static_cast<std::size_t>(shard.row_begin) * row_bytes,
                              bytes, what);
      continue;
    }
    Message reply = cluster->request(shard.ps, header, {}, what);
    if (reply.payload.size() != bytes) {
      throw CommunicationError(what, cluster->rank,
                               cluster->ps_label(shard.ps) + " sent " + std::to_string(reply.payload.size()) +
                                   " bytes for a shard of " + std::to_string(bytes));
    }
    if (bytes > 0) std::memcpy(out + static_cast<std::size_t>(shard.row_begin) * row_bytes, reply.payload.data(), bytes);
  }
  return result;
}

void RemoteVariable::update(const VariableState& state, Op op, const Tensor& value, double scalar) const {
  const auto* in = static_cast<const std::byte*>(value.raw_data());
  for (const ShardPlacement& shard : shards) {
    Header header;
    header.op = op;
    header.id = shard.id;
    header.scalar = scalar;
    const std::size_t begin = static_cast<std::size_t>(shard.row_begin) * row_bytes;
    const std::size_t bytes = static_cast<std::size_t>(shard.rows) * row_bytes;
    if (cluster->stages(shard.ps, bytes)) {
      cluster->staged_request(shard.ps, header, in + begin, nullptr, bytes, "updating variable '" + state.name + "'");
      continue;
    }
    Bytes payload(in + begin, in + begin + static_cast<std::size_t>(shard.rows) * row_bytes);
    cluster->request(shard.ps, header, std::move(payload), "updating variable '" + state.name + "'");
  }
}

Tensor remote_read(const VariableState& state) { return state.remote->read(state); }

void remote_update(const VariableState& state, const Tensor& value, int sign) {
  state.remote->update(state, sign == 0 ? Op::kAssign : sign > 0 ? Op::kAdd : Op::kSubtract, value, 0);
}

void remote_sgd(const VariableState& state, const Tensor& gradient, double learning_rate) {
  state.remote->update(state, Op::kSgd, gradient, learning_rate);
}

void write_variable(Writer& writer, const VariableState& state) {
  writer.u64(state.remote->id);
  writer.str(state.name);
  writer.u32(static_cast<std::uint32_t>(state.aggregation));
  writer.u32(state.trainable ? 1 : 0);
  writer.u32(static_cast<std::uint32_t>(state.dtype));
  writer.u32(static_cast<std::uint32_t>(state.shape.size()));
  for (std::int64_t d : state.shape) writer.i64(d);
  writer.u32(static_cast<std::uint32_t>(state.remote->shards.size()));
  for (const ShardPlacement& shard : state.remote->shards) {
    writer.u32(static_cast<std::uint32_t>(shard.ps));
    writer.u64(shard.id);
    writer.i64(shard.row_begin);
    writer.i64(shard.rows);
  }
}

std::shared_ptr<VariableState> read_variable(Reader& reader, const std::shared_ptr<PsCluster>& cluster) {
  auto remote = std::make_shared<RemoteVariable>();
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
  state->remote = std::move(remote);
  cluster->variables[state->remote->id] = state;
  return state;
}

}  // namespace collective::distribute::detail
