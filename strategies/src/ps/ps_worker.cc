// A worker's service loop: runs the closures the chief sends, one at a
// time, in the order they arrive, and sends back each result. A second
// thread sends heartbeats, so a worker busy in a long closure is not taken
// for a stopped one. Returns when the chief shuts the cluster down.
#include "ps/ps_worker.h"
#include <condition_variable>
#include <deque>
#include <map>
#include <optional>

#include "collective/errors.h"
#include "base/log.h"
#include "ps/chief_silence.h"
#include "collective/distribute/cluster_coordinator.h"
#include "collective/distribute/variable.h"
#include "ps/ps_cluster.h"
#include "ps/ps_variable.h"

namespace collective::distribute::detail {

namespace {

class Heartbeats {
 public:
  explicit Heartbeats(PsCluster& cluster) : cluster_(cluster), thread_([this] { run(); }) {}
  ~Heartbeats() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      lock.unlock();
      try {
        Header heartbeat;
        heartbeat.op = Op::kHeartbeat;
        cluster_.wire->send(0, kTagHeartbeat, heartbeat, {});
        cluster_.wire->progress();
      } catch (const std::exception& error) {
        DISTRIBUTE_LOG(kWarn, "worker heartbeat failed: " << error.what());
      }
      lock.lock();
      wake_.wait_for(lock, cluster_.heartbeat_interval, [this] { return stop_; });
    }
  }

  PsCluster& cluster_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

class ClosureRunner {
 public:
  explicit ClosureRunner(std::shared_ptr<PsCluster> cluster) : cluster_(std::move(cluster)) {}

  // Runs one closure message; the result message's status and payload.
  std::pair<Status, Bytes> run(const Message& m) {
    std::string name = "?";
    try {
      Reader reader(m.payload, "closure #" + std::to_string(m.header.id));
      const std::uint32_t function = reader.u32();
      if (function >= cluster_->functions->size() || cluster_->functions->is_dataset(function)) {
        throw InvalidArgumentError("worker " + std::to_string(cluster_->task_id), cluster_->rank,
                                   "closure names function " + std::to_string(function) +
                                       ", which is not a worker function of this rank's registry");
      }
      name = cluster_->functions->name(function);
      ClosureArguments arguments(name, cluster_->task_id, cluster_->num_workers);
      arguments.set_strategy(cluster_->strategy);
      const std::uint32_t count = reader.u32();
      for (std::uint32_t i = 0; i < count; ++i) {
        switch (reader.u32()) {
          case 0: arguments.add_tensor(reader.tensor()); break;
          case 1:
            arguments.add_variable(VariableState::handle(read_variable(reader, cluster_)));
            break;
          default: {
            const std::uint32_t dataset_function = reader.u32();
            const std::uint64_t dataset_id = reader.u64();
            const std::uint64_t iterator_id = reader.u64();
            arguments.add_iterator(&iterator(dataset_function, dataset_id, iterator_id));
            break;
          }
        }
      }
      Tensor result = cluster_->functions->function(function)(arguments);
      Writer writer;
      writer.tensor(result);
      return {Status::kOk, writer.take()};
    } catch (const UnavailableError& error) {
      return {Status::kPsUnavailable, text(error.what())};
    } catch (const std::exception& error) {
      return {Status::kError, text(error.what())};
    } catch (...) {
      return {Status::kError, text("an exception that is not a std::exception")};
    }
  }

 private:
  static Bytes text(const std::string& s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    return Bytes(p, p + s.size());
  }

  // This worker's dataset and iterator for a PerWorkerIterator, made on
  // first use.
  Dataset::Iterator& iterator(std::uint32_t function, std::uint64_t dataset_id,
                              std::uint64_t iterator_id) {
    if (auto it = iterators_.find(iterator_id); it != iterators_.end()) return it->second;
    if (function >= cluster_->functions->size() || !cluster_->functions->is_dataset(function)) {
      throw InvalidArgumentError("worker " + std::to_string(cluster_->task_id), cluster_->rank,
                                 "per-worker iterator names function " + std::to_string(function) +
                                     ", which is not a dataset function");
    }
    auto dataset = datasets_.find(dataset_id);
    if (dataset == datasets_.end()) {
      const InputContext context(cluster_->num_workers, cluster_->task_id, cluster_->num_workers);
      dataset =
          datasets_.emplace(dataset_id, cluster_->functions->dataset_function(function)(context))
              .first;
    }
    return iterators_.emplace(iterator_id, dataset->second.make_iterator()).first->second;
  }

  std::shared_ptr<PsCluster> cluster_;
  std::map<std::uint64_t, Dataset> datasets_;
  std::map<std::uint64_t, Dataset::Iterator> iterators_;
};

}  // namespace

bool serve_closures(const std::shared_ptr<PsCluster>& cluster) {
  Wire& wire = *cluster->wire;
  const std::string label = cluster->worker_label(cluster->task_id);
  ClosureRunner runner(cluster);
  Heartbeats heartbeats(*cluster);
  std::deque<Message> inbox;
  bool shutdown = false;
  // Silence from the chief counts only while this worker waits for work.
  Clock::time_point waiting_since = Clock::now();
  ChiefSilence chief_silence(*cluster, label);
  for (int idle = 0;;) {
    const Clock::time_point deadline = Clock::now() + cluster->failure_timeout;
    while (std::optional<Message> m = wire.poll(0, kTagControl, deadline, "a closure")) {
      waiting_since = Clock::now();
      if (m->header.op == Op::kShutdown) shutdown = true;
      if (m->header.op == Op::kClosure) inbox.push_back(std::move(*m));
    }
    if (shutdown) {
      // Closures still queued here were abandoned by the chief.
      Header bye;
      bye.op = Op::kBye;
      wire.send(0, kTagResult, bye, {});
      const bool flushed = wire.flush(Clock::now() + cluster->failure_timeout);
      if (!flushed) DISTRIBUTE_LOG(kWarn, label << ": sends still pending at shutdown");
      DISTRIBUTE_LOG(kInfo, label << " shut down by the chief (" << inbox.size()
                                  << " queued closures dropped)");
      return flushed;
    }
    if (!inbox.empty()) {
      Message closure = std::move(inbox.front());
      inbox.pop_front();
      auto [status, payload] = runner.run(closure);
      Header result;
      result.op = Op::kResult;
      result.status = status;
      result.id = closure.header.id;
      result.seq = closure.header.seq;
      wire.send(0, kTagResult, result, std::move(payload));
      waiting_since = Clock::now();
      idle = 0;
      continue;
    }
    chief_silence.check(waiting_since, Clock::now());
    if ((idle & 63) == 63) wire.progress();
    idle_pause(idle++);
  }
}

}  // namespace collective::distribute::detail
