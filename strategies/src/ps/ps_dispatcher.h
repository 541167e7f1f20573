// The chief's dispatcher (ps_dispatcher.cc), the ClosureScheduler of its
// cluster.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ps/closure_scheduler.h"
#include "ps/cluster_coordinator.h"
#include "ps/ps_cluster.h"

namespace collective::distribute::detail {

// The chief's background thread: hands closures to workers, collects
// results, watches heartbeats.
class Dispatcher final : public ClosureScheduler {
 public:
  explicit Dispatcher(PsCluster& cluster);
  ~Dispatcher() override;
  void stop() noexcept override;

  std::shared_ptr<RemoteValueState> schedule(std::uint32_t function, Bytes arguments) override;
  void join() override;
  bool done() override;
  void check_available() override;
  std::vector<bool> workers_alive() override;

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
  std::optional<std::string> unavailable_;                          // why the cluster cannot go on
  std::optional<std::pair<std::string, std::string>> first_error_;  // operation, cause
  int first_error_rank_ = -1;
  int next_worker_ = 0;
  Clock::time_point last_heartbeat_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace collective::distribute::detail
