#include "core/blocking_call_watch.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "core/env_params.h"
#include "core/failure_record.h"
#include "core/log.h"

namespace collective::internal {
namespace {

struct WatchRegistry {
  std::mutex mutex;
  std::vector<const BlockingCallWatch*> calls;
  std::once_flag watcher_started;
};

WatchRegistry& watch_registry() {
  static WatchRegistry* instance = new WatchRegistry;  // the watcher outlives static destruction
  return *instance;
}

[[noreturn]] void end_process(const BlockingCallWatch& watch, const std::vector<int>& gone) {
  const PeerLiveness& liveness = watch.state().liveness;
  std::ostringstream text;
  text << watch.label() << " (rank " << watch.state().rank << "): ";
  for (std::size_t i = 0; i < gone.size(); ++i) {
    if (i > 0) text << (i + 1 == gone.size() ? " and " : ", ");
    text << liveness.describe(gone[i]);
  }
  text << " died during MPI's blocking " << watch.call()
       << ", which never returns after a rank's death:"
       << " ending this process with exit status " << kExitStatusAfterFailure;
  record_communication_failure(text.str());
  COLLECTIVE_LOG(kWarn, text.str());
  std::_Exit(kExitStatusAfterFailure);
}

void watch_forever() {
  WatchRegistry& watched = watch_registry();
  for (;;) {
    const std::chrono::milliseconds interval = env_params().peer_check_interval;
    std::this_thread::sleep_for(interval);
    const std::lock_guard<std::mutex> lock(watched.mutex);
    const Clock::time_point now = Clock::now();
    for (const BlockingCallWatch* call : watched.calls) {
      if (now - call->start() < interval) continue;
      const std::vector<int> gone = call->state().liveness.gone();
      if (!gone.empty()) end_process(*call, gone);
    }
  }
}

}  // namespace

BlockingCallWatch::BlockingCallWatch(const Request& request, const WaitSubject& state,
                                     const char* call)
    : request_(&request), state_(&state), call_(call) {
  start_watching();
}

BlockingCallWatch::BlockingCallWatch(const char* operation, const WaitSubject& state,
                                     const char* call)
    : operation_(operation), state_(&state), call_(call) {
  start_watching();
}

void BlockingCallWatch::start_watching() {
  if (state_->liveness.empty() || state_->liveness.judged_count() == 0) return;
  WatchRegistry& watched = watch_registry();
  std::call_once(watched.watcher_started, [] { std::thread(watch_forever).detach(); });
  start_ = Clock::now();
  const std::lock_guard<std::mutex> lock(watched.mutex);
  watched.calls.push_back(this);
  watched_ = true;
}

BlockingCallWatch::~BlockingCallWatch() {
  if (!watched_) return;
  WatchRegistry& watched = watch_registry();
  const std::lock_guard<std::mutex> lock(watched.mutex);
  watched.calls.erase(std::find(watched.calls.begin(), watched.calls.end(), this));
}

}  // namespace collective::internal
