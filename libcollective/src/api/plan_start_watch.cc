#include "api/plan_start_watch.h"

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <set>
#include <thread>

namespace collective::internal {
namespace {

struct PlanWatch {
  std::mutex mutex;
  std::condition_variable plans_changed;
  std::set<PlanStartSource*> engines;  // those that had a plan, until they go
  std::size_t live_plans = 0;
  bool thread_started = false;
};

// Never destroyed: the detached thread may outlive static destruction.
PlanWatch& plan_watch() {
  static auto* watch = new PlanWatch;
  return *watch;
}

void watch_forever() {
  PlanWatch& watch = plan_watch();
  std::unique_lock<std::mutex> lock(watch.mutex);
  for (;;) {
    watch.plans_changed.wait(lock, [&] { return watch.live_plans > 0; });
    lock.unlock();
    std::this_thread::sleep_for(kPlanPollInterval);
    lock.lock();
    for (PlanStartSource* engine : watch.engines) engine->take_stale_plan_start();
  }
}

}  // namespace

void plan_watch_add(PlanStartSource& engine) {
  PlanWatch& watch = plan_watch();
  {
    const std::lock_guard<std::mutex> lock(watch.mutex);
    watch.engines.insert(&engine);
    ++watch.live_plans;
    if (!watch.thread_started) {
      std::thread(watch_forever).detach();
      watch.thread_started = true;
    }
  }
  watch.plans_changed.notify_one();
}

void plan_watch_remove() {
  PlanWatch& watch = plan_watch();
  const std::lock_guard<std::mutex> lock(watch.mutex);
  if (watch.live_plans > 0) --watch.live_plans;
}

void plan_watch_forget(PlanStartSource& engine, std::size_t plans_left) {
  PlanWatch& watch = plan_watch();
  const std::lock_guard<std::mutex> lock(watch.mutex);
  if (watch.engines.erase(&engine) == 0) return;
  watch.live_plans -= std::min(plans_left, watch.live_plans);
}

}  // namespace collective::internal
