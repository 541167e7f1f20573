// The chief's dispatcher: one background thread that sends queued closures
// to workers (up to closures_in_flight_per_worker each, the least loaded
// first), collects their results, sends heartbeats to every server and
// watches theirs. A worker silent for the failure timeout is declared
// failed and its unfinished closures go back to the front of the queue for
// the other workers; a silent ps fails the cluster (UnavailableError).
#include "ps/ps_dispatcher.h"
#include "collective/errors.h"
#include "base/log.h"

namespace collective::distribute::detail {

Dispatcher::Dispatcher(PsCluster& cluster)
    : cluster_(cluster),
      workers_(static_cast<std::size_t>(cluster.num_workers)),
      ps_(static_cast<std::size_t>(cluster.num_ps)) {
  const Clock::time_point now = Clock::now();
  for (Peer& peer : workers_) peer.last_seen = now;
  for (Peer& peer : ps_) peer.last_seen = now;
  last_heartbeat_ = Clock::time_point{};
  thread_ = std::thread([this] { loop(); });
}

Dispatcher::~Dispatcher() { stop(); }

void Dispatcher::stop() noexcept {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  cancel_queued("the cluster shut down");
}

void Dispatcher::loop() {
  for (int idle = 0; !stop_.load();) {
    bool busy = false;
    try {
      busy = step();
    } catch (const std::exception& error) {
      fail_everything(std::string("the dispatcher failed: ") + error.what());
    }
    if (busy) {
      idle = 0;
    } else {
      idle_pause(idle++);
    }
  }
}

bool Dispatcher::step() {
  Wire& wire = *cluster_.wire;
  bool busy = false;
  // Hand out closures.
  std::vector<std::pair<int, std::shared_ptr<Closure>>> sends;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!queue_.empty() && !unavailable_) {
      int best = -1;
      for (int i = 0; i < cluster_.num_workers; ++i) {
        const int w = (next_worker_ + i) % cluster_.num_workers;
        const Peer& peer = workers_[static_cast<std::size_t>(w)];
        if (!peer.alive || peer.in_flight >= cluster_.closures_in_flight_per_worker) continue;
        if (best < 0 || peer.in_flight < workers_[static_cast<std::size_t>(best)].in_flight)
          best = w;
      }
      if (best < 0) break;
      next_worker_ = (best + 1) % cluster_.num_workers;
      std::shared_ptr<Closure> closure = queue_.front();
      queue_.pop_front();
      closure->worker = best;
      ++closure->attempt;
      ++workers_[static_cast<std::size_t>(best)].in_flight;
      running_[closure->id] = closure;
      sends.emplace_back(best, std::move(closure));
    }
  }
  for (auto& [worker, closure] : sends) {
    Header header;
    header.op = Op::kClosure;
    header.id = closure->id;
    header.seq = closure->attempt;
    wire.send(cluster_.worker_rank(worker), kTagControl, header, closure->arguments);
    busy = true;
  }
  // Results and heartbeats.
  const Clock::time_point deadline = Clock::now() + cluster_.failure_timeout;
  for (int n = 0; n < 256; ++n) {
    std::optional<Message> m = wire.poll(-1, kTagResult, deadline, "a closure result");
    if (!m) break;
    busy = true;
    handle_result(*m);
  }
  const Clock::time_point now = Clock::now();
  while (std::optional<Message> m = wire.poll(-1, kTagHeartbeat, deadline, "a heartbeat")) {
    std::lock_guard<std::mutex> lock(mutex_);
    const int r = m->source;
    if (r >= 1 && r <= cluster_.num_ps) {
      ps_[static_cast<std::size_t>(r - 1)].last_seen = now;
    } else if (r > cluster_.num_ps && r < 1 + cluster_.num_ps + cluster_.num_workers) {
      workers_[static_cast<std::size_t>(r - 1 - cluster_.num_ps)].last_seen = now;
    }
  }
  if (now - last_heartbeat_ >= cluster_.heartbeat_interval) {
    last_heartbeat_ = now;
    for (int r = 1; r < 1 + cluster_.num_ps + cluster_.num_workers; ++r) {
      const bool is_worker = r > cluster_.num_ps;
      if (is_worker && !workers_[static_cast<std::size_t>(r - 1 - cluster_.num_ps)].alive) continue;
      Header heartbeat;
      heartbeat.op = Op::kHeartbeat;
      wire.send(r, kTagControl, heartbeat, {});
    }
    wire.progress();
    check_peers();
  }
  return busy;
}

void Dispatcher::handle_result(const Message& m) {
  const int worker = m.source - 1 - cluster_.num_ps;
  std::shared_ptr<Closure> closure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (worker < 0 || worker >= cluster_.num_workers) return;
    Peer& peer = workers_[static_cast<std::size_t>(worker)];
    peer.last_seen = Clock::now();
    const auto it = running_.find(m.header.id);
    // A result from a worker declared failed, for a closure already given
    // to another worker, is dropped.
    if (it == running_.end() || it->second->worker != worker || it->second->attempt != m.header.seq)
      return;
    closure = it->second;
    running_.erase(it);
    --peer.in_flight;
  }
  const std::string name = cluster_.functions->name(closure->function);
  const std::string operation = "closure '" + name + "' #" + std::to_string(closure->id);
  if (m.header.status == Status::kOk) {
    Tensor value;
    try {
      Reader reader(m.payload, operation + " result");
      value = reader.tensor();
    } catch (const std::exception& error) {
      closure->value->fail(RemoteValue::Status::kFailed, operation, m.source, error.what(), false);
    }
    closure->value->finish(RemoteValue::Status::kReady, std::move(value));
  } else {
    const std::string message(reinterpret_cast<const char*>(m.payload.data()), m.payload.size());
    if (m.header.status == Status::kPsUnavailable) {
      fail_everything(operation + " on " + cluster_.worker_label(worker) + ": " + message);
    } else {
      const std::string cause = "failed on " + cluster_.worker_label(worker) + ": " + message;
      // The error is recorded for join() before fetch() can see it, so a
      // join() after a failed fetch() always raises it.
      std::deque<std::shared_ptr<Closure>> cancelled;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!first_error_) {
          first_error_.emplace(operation, cause);
          first_error_rank_ = m.source;
        }
        // As TF does: closures not yet started are cancelled once one failed.
        cancelled.swap(queue_);
      }
      for (auto& queued : cancelled) {
        queued->value->fail(RemoteValue::Status::kCancelled,
                            "closure '" + cluster_.functions->name(queued->function) + "' #" +
                                std::to_string(queued->id),
                            -1, "cancelled because " + operation + " failed first", false);
      }
      closure->value->fail(RemoteValue::Status::kFailed, operation, m.source, cause, false);
    }
  }
  changed_.notify_all();
}

void Dispatcher::check_peers() {
  const Clock::time_point now = Clock::now();
  std::optional<std::string> ps_failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int p = 0; p < cluster_.num_ps; ++p) {
      if (now - ps_[static_cast<std::size_t>(p)].last_seen > cluster_.failure_timeout &&
          !unavailable_) {
        ps_failure = cluster_.ps_label(p) +
                     " stopped answering (no heartbeat for the failure timeout, " +
                     seconds_text(cluster_.failure_timeout) + ")";
        break;
      }
    }
    int alive = 0;
    for (int w = 0; w < cluster_.num_workers; ++w) {
      Peer& peer = workers_[static_cast<std::size_t>(w)];
      if (peer.alive && now - peer.last_seen > cluster_.failure_timeout) {
        peer.alive = false;
        std::vector<std::shared_ptr<Closure>> orphans;
        for (auto it = running_.begin(); it != running_.end();) {
          if (it->second->worker == w) {
            orphans.push_back(it->second);
            it = running_.erase(it);
          } else {
            ++it;
          }
        }
        peer.in_flight = 0;
        // Back to the front, in their original order.
        for (auto it = orphans.rbegin(); it != orphans.rend(); ++it) {
          (*it)->worker = -1;
          queue_.push_front(*it);
        }
        DISTRIBUTE_LOG(kWarn, "ParameterServerStrategy: "
                                  << cluster_.worker_label(w)
                                  << " stopped answering (no heartbeat for "
                                  << std::chrono::duration<double>(cluster_.failure_timeout).count()
                                  << " s); rescheduling its " << orphans.size()
                                  << " unfinished closures on the other workers");
      }
      if (peer.alive) ++alive;
    }
    if (alive == 0 && !ps_failure && !unavailable_) {
      ps_failure = "every worker stopped answering (no heartbeat for the failure timeout)";
    }
  }
  if (ps_failure) fail_everything(*ps_failure);
}

void Dispatcher::fail_everything(const std::string& cause) {
  std::vector<std::shared_ptr<Closure>> closures;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!unavailable_) {
      unavailable_ = cause;
      DISTRIBUTE_LOG(kWarn, "ParameterServerStrategy: " << cause << "; scheduled closures fail");
    }
    for (auto& closure : queue_) closures.push_back(closure);
    for (auto& [id, closure] : running_) closures.push_back(closure);
    queue_.clear();
    running_.clear();
    for (Peer& peer : workers_) peer.in_flight = 0;
  }
  for (auto& closure : closures) {
    closure->value->fail(RemoteValue::Status::kFailed,
                         "closure '" + cluster_.functions->name(closure->function) + "' #" +
                             std::to_string(closure->id),
                         0, *unavailable_, true);
  }
  changed_.notify_all();
}

void Dispatcher::cancel_queued(const std::string& reason) {
  std::vector<std::shared_ptr<Closure>> closures;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& closure : queue_) closures.push_back(closure);
    for (auto& [id, closure] : running_) closures.push_back(closure);
    queue_.clear();
    running_.clear();
  }
  for (auto& closure : closures) {
    closure->value->fail(RemoteValue::Status::kCancelled,
                         "closure '" + cluster_.functions->name(closure->function) + "' #" +
                             std::to_string(closure->id),
                         0, "cancelled: " + reason, false);
  }
  changed_.notify_all();
}

std::shared_ptr<RemoteValueState> Dispatcher::schedule(std::uint32_t function, Bytes arguments) {
  auto closure = std::make_shared<Closure>();
  closure->function = function;
  closure->arguments = std::move(arguments);
  closure->value = std::make_shared<RemoteValueState>();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (unavailable_) {
      throw UnavailableError("ClusterCoordinator::schedule", 0, *unavailable_);
    }
    if (stop_.load()) {
      throw InvalidArgumentError("ClusterCoordinator::schedule", 0, "the cluster was shut down");
    }
    closure->id = next_closure_++;
    queue_.push_back(closure);
  }
  return closure->value;
}

std::vector<bool> Dispatcher::workers_alive() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<bool> alive;
  for (const Peer& peer : workers_) alive.push_back(peer.alive);
  return alive;
}

void Dispatcher::check_available() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (unavailable_) throw UnavailableError("ClusterCoordinator", 0, *unavailable_);
}

void Dispatcher::raise_errors() {
  // mutex_ held by the caller.
  if (unavailable_) throw UnavailableError("ClusterCoordinator::join", 0, *unavailable_);
  if (first_error_) {
    auto [operation, cause] = *first_error_;
    const int rank = first_error_rank_;
    first_error_.reset();
    throw ClosureError(operation, rank, cause);
  }
}

void Dispatcher::join() {
  std::unique_lock<std::mutex> lock(mutex_);
  // Waits as long as closures are making progress: a failed worker or ps
  // is detected within the failure timeout and ends or reroutes the wait.
  changed_.wait(lock, [this] { return (queue_.empty() && running_.empty()) || unavailable_; });
  raise_errors();
}

bool Dispatcher::done() {
  std::lock_guard<std::mutex> lock(mutex_);
  raise_errors();
  return queue_.empty() && running_.empty();
}

}  // namespace collective::distribute::detail
