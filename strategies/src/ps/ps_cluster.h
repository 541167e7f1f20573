// The state of one parameter-server cluster as one process sees it: the
// wire, the roles, the timeouts, the registered functions; the client that
// sends variable requests to ps tasks (ps_client.h); the coordinator's
// dispatcher (chief only, behind closure_scheduler.h). Made by
// ParameterServerStrategy (make_ps_cluster); servers (ps_server.h,
// ps_worker.h) run their loops on it. It includes neither the strategy's
// nor the coordinator's header: both are built on it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ps/closure_scheduler.h"
#include "ps/ps_client.h"
#include "ps/ps_roles.h"
#include "ps/ps_wire.h"
#include "core/variable_state.h"

namespace collective::distribute {
class RemoteFunctions;
class Strategy;
struct ParameterServerOptions;
}  // namespace collective::distribute

namespace collective::distribute::detail {

struct PsCluster : std::enable_shared_from_this<PsCluster> {
  // Made by make_ps_cluster (parameter_server_strategy.cc), which checks
  // the options and that every rank registered the same functions.
  PsCluster();
  ~PsCluster();

  std::unique_ptr<Wire> wire;
  int rank = 0;
  int num_ps = 0;
  int num_workers = 0;
  std::string task_type;
  int task_id = 0;
  std::shared_ptr<const RemoteFunctions> functions;  // the strategy's, copied
  std::shared_ptr<const ParameterServerOptions> options;
  int closures_in_flight_per_worker = 1;  // options->closures_in_flight_per_worker
  std::chrono::milliseconds failure_timeout{30'000};
  std::chrono::milliseconds heartbeat_interval{100};
  std::uint64_t strategy_serial = 0;  // owning StrategyImpl's serial
  std::string strategy_label;
  Strategy* strategy = nullptr;  // the owning strategy (closures run on it)

  int ps_rank(int ps) const { return ps_rank_of(ps); }
  int worker_rank(int worker) const { return worker_rank_of(num_ps, worker); }
  std::string ps_label(int ps) const { return ps_label_of(ps); }
  std::string worker_label(int worker) const { return worker_label_of(num_ps, worker); }

  // The requests to ps tasks (chief and workers); made with the wire.
  std::unique_ptr<PsClient> client;
  bool same_node_shared_memory = true;

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

}  // namespace collective::distribute::detail
