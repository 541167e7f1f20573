// The state of one parameter-server cluster as one process sees it: the
// wire, the roles, the timeouts, the registered functions; the client that
// sends variable requests to ps tasks (chief and workers); the coordinator's
// dispatcher (chief only, behind closure_scheduler.h). Made by
// ParameterServerStrategy (make_ps_cluster); servers (ps_server.h,
// ps_worker.h) run their loops on it. It includes neither the strategy's
// nor the coordinator's header: both are built on it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ps/closure_scheduler.h"
#include "ps/ps_staging.h"
#include "ps/ps_wire.h"
#include "core/variable_state.h"

namespace collective::distribute {
class RemoteFunctions;
class Strategy;
struct ParameterServerOptions;
}  // namespace collective::distribute

namespace collective::distribute::detail {

// One piece of a variable on one ps: rows [row_begin, row_begin + rows) of
// the first axis (the whole variable when unsharded).
struct ShardPlacement {
  int ps = 0;
  std::uint64_t id = 0;  // the shard's id on its ps (unique in the cluster)
  std::int64_t row_begin = 0;
  std::int64_t rows = 0;
};

struct RemoteVariable;
class ClosureScheduler;

struct PsCluster : std::enable_shared_from_this<PsCluster> {
  // Made by make_ps_cluster (cluster_setup.h), which checks the options and
  // that every rank registered the same functions.
  PsCluster();
  ~PsCluster();

  std::unique_ptr<Wire> wire;
  int rank = 0;
  int num_ps = 0;
  int num_workers = 0;
  std::string task_type;
  int task_id = 0;
  std::shared_ptr<const RemoteFunctions> functions;     // the strategy's, copied
  std::shared_ptr<const ParameterServerOptions> options;
  int closures_in_flight_per_worker = 1;  // options->closures_in_flight_per_worker
  std::chrono::milliseconds failure_timeout{30'000};
  std::chrono::milliseconds heartbeat_interval{100};
  std::uint64_t strategy_serial = 0;  // owning StrategyImpl's serial
  std::string strategy_label;
  Strategy* strategy = nullptr;  // the owning strategy (closures run on it)

  int ps_rank(int ps) const { return 1 + ps; }
  int worker_rank(int worker) const { return 1 + num_ps + worker; }
  std::string ps_label(int ps) const {
    return "ps " + std::to_string(ps) + " (rank " + std::to_string(ps_rank(ps)) + ")";
  }
  std::string worker_label(int worker) const {
    return "worker " + std::to_string(worker) + " (rank " + std::to_string(worker_rank(worker)) + ")";
  }

  // ---- client: one request at a time per process -------------------------
  // Sends a request to a ps and waits (at most the failure timeout) for its
  // reply; UnavailableError naming the ps on timeout, CommunicationError
  // with the ps's message when it refused.
  Message request(int ps, Header header, Bytes payload, const std::string& what);
  // The same for a payload of `bytes` that goes through the staging
  // segment shared with the ps: copied from `in` before the request (an
  // update), or into `out` from the reply (a read). Only where stages().
  Message staged_request(int ps, Header header, const std::byte* in, std::byte* out, std::size_t bytes,
                         const std::string& what);
  // The documented rule: shared memory on, the ps on this node, and a
  // payload too large to ride in a header message.
  bool stages(int ps, std::size_t bytes) const {
    return same_node_shared_memory && bytes > Wire::kInlineBytes && wire->same_node(ps_rank(ps));
  }
  Message request_locked(int ps, Header header, Bytes payload, const std::string& what);
  std::mutex client_mutex;
  std::uint64_t next_sequence = 1;
  bool same_node_shared_memory = true;
  struct Staging {
    std::uint64_t generation = 0;
    std::unique_ptr<StagingSegment> segment;
  };
  std::map<int, Staging> staging;  // by ps, under client_mutex
  std::atomic<std::uint64_t> staged_requests{0};  // how many went through staging (tests)
  std::uint64_t next_generation = 1;

  // ---- variables (chief creates, workers learn them from closures) ------
  std::atomic<std::uint64_t> next_shard_id{1};
  std::atomic<std::uint64_t> next_variable_id{1};
  int next_ps = 0;  // round robin over shards, in creation order
  std::mutex variables_mutex;
  std::map<std::uint64_t, std::weak_ptr<VariableState>> variables;  // by variable id

  // ---- chief -------------------------------------------------------------
  std::unique_ptr<ClosureScheduler> dispatcher;  // ps_dispatcher.h
  bool shut_down = false;
  void shutdown() noexcept;
};

// A variable whose value lives on ps tasks.
struct RemoteVariable {
  std::shared_ptr<PsCluster> cluster;
  std::uint64_t id = 0;
  std::vector<ShardPlacement> shards;
  std::size_t row_bytes = 0;  // bytes of one row of the first axis (the whole for scalars)

  Tensor read(const VariableState& state) const;
  // kAssign, kAdd, kSubtract, kSgd (scalar = learning rate).
  void update(const VariableState& state, Op op, const Tensor& value, double scalar) const;
};

// Descriptor of a variable as closures carry it.
void write_variable(Writer& writer, const VariableState& state);
std::shared_ptr<VariableState> read_variable(Reader& reader, const std::shared_ptr<PsCluster>& cluster);

}  // namespace collective::distribute::detail
