// The state of one parameter-server cluster as one process sees it: the
// wire, the roles, the timeouts, the registered functions; the client that
// sends variable requests to ps tasks (chief and workers); the coordinator's
// dispatcher (chief only). Servers (ps_server.cc, ps_worker.cc) run their
// loops on it.
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

#include "collective/distribute/cluster_coordinator.h"
#include "collective/distribute/parameter_server_strategy.h"
#include "ps/ps_staging.h"
#include "ps/ps_wire.h"
#include "core/variable_state.h"

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

struct RemoteValueState {
  std::mutex mutex;
  std::condition_variable changed;
  RemoteValue::Status status = RemoteValue::Status::kPending;
  Tensor value;
  // kFailed / kCancelled: what fetch() raises.
  std::string error_operation;
  int error_rank = -1;
  std::string error_cause;
  bool unavailable = false;  // UnavailableError rather than ClosureError

  void finish(RemoteValue::Status status, Tensor value = Tensor());
  void fail(RemoteValue::Status status, std::string operation, int rank, std::string cause,
            bool unavailable);
};

class Dispatcher;

struct PsCluster : std::enable_shared_from_this<PsCluster> {
  PsCluster(const MPIClusterResolver& resolver, const RemoteFunctions& functions,
            ParameterServerOptions options);
  ~PsCluster();

  std::unique_ptr<Wire> wire;
  int rank = 0;
  int num_ps = 0;
  int num_workers = 0;
  std::string task_type;
  int task_id = 0;
  RemoteFunctions functions;
  ParameterServerOptions options;
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
  std::unique_ptr<Dispatcher> dispatcher;
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

// The chief's background thread: hands closures to workers, collects
// results, watches heartbeats.
class Dispatcher {
 public:
  explicit Dispatcher(PsCluster& cluster);
  ~Dispatcher();
  void stop() noexcept;

  RemoteValue schedule(std::uint32_t function, Bytes arguments);
  void join();
  bool done();
  // Raises UnavailableError once a ps or every worker has failed.
  void check_available();
  // Whether each worker is still considered alive.
  std::vector<bool> workers_alive();

 private:
  struct Closure {
    std::uint64_t id = 0;
    std::uint32_t function = 0;
    Bytes arguments;
    std::shared_ptr<RemoteValueState> value;
    std::uint64_t attempt = 0;
    int worker = -1;
  };
  struct Peer {
    bool alive = true;
    int in_flight = 0;
    Clock::time_point last_seen;
  };

  void loop();
  bool step();
  void handle_result(const Message& message);
  void check_peers();
  void fail_everything(const std::string& cause);
  void cancel_queued(const std::string& reason);
  void raise_errors();

  PsCluster& cluster_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Closure>> queue_;
  std::map<std::uint64_t, std::shared_ptr<Closure>> running_;
  std::vector<Peer> workers_;
  std::vector<Peer> ps_;
  std::uint64_t next_closure_ = 1;
  std::optional<std::string> unavailable_;  // why the cluster cannot go on
  std::optional<std::pair<std::string, std::string>> first_error_;  // operation, cause
  int first_error_rank_ = -1;
  int next_worker_ = 0;
  Clock::time_point last_heartbeat_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Server loops: return when the chief shuts the cluster down, true when
// every send (the bye included) completed.
bool serve_parameters(const std::shared_ptr<PsCluster>& cluster);
bool serve_closures(const std::shared_ptr<PsCluster>& cluster);

}  // namespace collective::distribute::detail
