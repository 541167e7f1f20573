// collective_plan_t: the registry of handles and the entry points that
// start and free a persistent plan (collective/plan.h).
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "collective/collective_c.h"
#include "comm_handles.h"
#include "last_error.h"
#include "plan_handles.h"
#include "work_handles.h"

namespace collective::capi {
namespace {

struct PlanRegistry {
  std::mutex mutex;
  std::unordered_map<std::uintptr_t, std::shared_ptr<Plan>> live;
  std::uintptr_t next = 1;  // serials are never reused
};

PlanRegistry& plan_registry() {
  static auto* the_registry = new PlanRegistry;  // outlives every static
  return *the_registry;
}

std::uintptr_t serial_of(collective_plan_t handle) {
  return reinterpret_cast<std::uintptr_t>(handle);
}

std::shared_ptr<Plan> find_plan(collective_plan_t handle, std::string& why) {
  PlanRegistry& all = plan_registry();
  const std::lock_guard<std::mutex> lock(all.mutex);
  const auto found = all.live.find(serial_of(handle));
  if (found != all.live.end()) return found->second;
  char text[32];
  std::snprintf(text, sizeof(text), "%p", static_cast<void*>(handle));
  why = std::string("plan handle ") + text +
        (serial_of(handle) < all.next ? " was freed by collective_plan_free"
                                      : " was never issued by this library");
  return nullptr;
}

}  // namespace

collective_plan_t issue_plan(Plan plan) {
  PlanRegistry& all = plan_registry();
  const std::lock_guard<std::mutex> lock(all.mutex);
  const std::uintptr_t serial = all.next++;
  all.live.emplace(serial, std::make_shared<Plan>(std::move(plan)));
  return reinterpret_cast<collective_plan_t>(serial);
}

}  // namespace collective::capi

using collective::capi::fail_argument;
using collective::capi::process_rank;

extern "C" {

int collective_plan_start(collective_plan_t plan, collective_work_t* work) {
  const char* operation = "collective_plan_start";
  if (work == nullptr)
    return fail_argument(operation, process_rank(), "output work handle pointer is NULL");
  *work = nullptr;
  if (plan == nullptr) return fail_argument(operation, process_rank(), "plan handle is NULL");
  std::string why;
  std::shared_ptr<collective::Plan> found;
  try {
    found = collective::capi::find_plan(plan, why);
  } catch (...) {
    return collective::capi::fail_from_current_exception(operation, process_rank());
  }
  if (!found) return fail_argument(operation, process_rank(), why);
  return collective::capi::guarded(operation, process_rank(),
                                   [&] { *work = collective::capi::issue_work(found->start()); });
}

int collective_plan_free(collective_plan_t* plan) {
  const char* operation = "collective_plan_free";
  if (plan == nullptr) return fail_argument(operation, process_rank(), "handle pointer is NULL");
  if (*plan == nullptr) return COLLECTIVE_SUCCESS;
  collective::capi::PlanRegistry& all = collective::capi::plan_registry();
  std::shared_ptr<collective::Plan> retired;  // released outside the lock
  {
    const std::lock_guard<std::mutex> lock(all.mutex);
    const auto found = all.live.find(collective::capi::serial_of(*plan));
    if (found == all.live.end()) {
      std::string why;
      // find_plan takes the lock itself: name the handle without it.
      char text[32];
      std::snprintf(text, sizeof(text), "%p", static_cast<void*>(*plan));
      why = std::string("plan handle ") + text +
            (collective::capi::serial_of(*plan) < all.next ? " was freed by collective_plan_free"
                                                           : " was never issued by this library");
      return fail_argument(operation, process_rank(), why);
    }
    // The rule of docs/c_api.md: a plan with a start in flight is not
    // freed; the handle stays valid, so the caller can wait and free again.
    const collective::Work last = found->second->last_start();
    if (!last.is_completed()) {
      return fail_argument(operation, process_rank(),
                           found->second->describe() + " has a start in flight (" +
                               last.operation() +
                               "): wait for its work (collective_work_wait) before freeing "
                               "the plan");
    }
    retired = std::move(found->second);
    all.live.erase(found);
  }
  *plan = nullptr;
  return COLLECTIVE_SUCCESS;
}

}  // extern "C"
