// collective_work_t: the registry of handles and the entry points that
// wait for, test and free a call in flight.
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "collective/collective_c.h"
#include "comm_handles.h"
#include "last_error.h"
#include "work_handles.h"

namespace collective::capi {
namespace {

struct WorkRegistry {
  std::mutex mutex;
  std::unordered_map<std::uintptr_t, std::shared_ptr<Work>> live;
  std::uintptr_t next = 1;  // serials are never reused
};

WorkRegistry& work_registry() {
  static auto* the_registry = new WorkRegistry;  // outlives every static
  return *the_registry;
}

std::uintptr_t serial_of(collective_work_t handle) {
  return reinterpret_cast<std::uintptr_t>(handle);
}

std::string not_live(collective_work_t handle, std::uintptr_t next) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", static_cast<void*>(handle));
  return std::string("work handle ") + text +
         (serial_of(handle) < next ? " was freed by collective_work_free"
                                   : " was never issued by this library");
}

template <typename Body>
int with_work(const char* operation, collective_work_t handle, Body&& body) noexcept {
  if (handle == nullptr) return fail_argument(operation, process_rank(), "work handle is NULL");
  std::string why;
  std::shared_ptr<Work> work;
  try {
    work = find_work(handle, why);
  } catch (...) {
    return fail_from_current_exception(operation, process_rank());
  }
  if (!work) return fail_argument(operation, process_rank(), why);
  return guarded(operation, process_rank(), [&] { body(*work); });
}

}  // namespace

collective_work_t issue_work(Work work) {
  WorkRegistry& all = work_registry();
  const std::lock_guard<std::mutex> lock(all.mutex);
  const std::uintptr_t serial = all.next++;
  all.live.emplace(serial, std::make_shared<Work>(std::move(work)));
  return reinterpret_cast<collective_work_t>(serial);
}

std::shared_ptr<Work> find_work(collective_work_t handle, std::string& why) {
  WorkRegistry& all = work_registry();
  const std::lock_guard<std::mutex> lock(all.mutex);
  const auto found = all.live.find(serial_of(handle));
  if (found != all.live.end()) return found->second;
  why = not_live(handle, all.next);
  return nullptr;
}

bool retire_work(collective_work_t handle, std::string& why) {
  std::shared_ptr<Work> retired;  // released outside the lock
  WorkRegistry& all = work_registry();
  const std::lock_guard<std::mutex> lock(all.mutex);
  const auto found = all.live.find(serial_of(handle));
  if (found == all.live.end()) {
    why = not_live(handle, all.next);
    return false;
  }
  retired = std::move(found->second);
  all.live.erase(found);
  return true;
}

}  // namespace collective::capi

using collective::capi::fail_argument;
using collective::capi::with_work;

extern "C" {

int collective_work_wait(collective_work_t work) {
  return with_work("collective_work_wait", work, [](collective::Work& w) { w.wait(); });
}

int collective_work_wait_for(collective_work_t work, int64_t timeout_ms, int* completed) {
  const char* operation = "collective_work_wait_for";
  if (completed == nullptr) {
    return fail_argument(operation, collective::capi::process_rank(), "completed pointer is NULL");
  }
  *completed = 0;
  return with_work(operation, work, [&](collective::Work& w) {
    *completed = w.wait(std::chrono::milliseconds(timeout_ms)) ? 1 : 0;
  });
}

int collective_work_test(collective_work_t work, int* completed) {
  const char* operation = "collective_work_test";
  if (completed == nullptr) {
    return fail_argument(operation, collective::capi::process_rank(), "completed pointer is NULL");
  }
  *completed = 0;
  return with_work(operation, work, [&](collective::Work& w) {
    // Finished (failed too) is completed; a failure is also the status.
    *completed = w.is_completed() ? 1 : 0;
    if (*completed) w.test();
  });
}

int collective_work_free(collective_work_t* work) {
  const char* operation = "collective_work_free";
  if (work == nullptr) {
    return fail_argument(operation, collective::capi::process_rank(), "handle pointer is NULL");
  }
  if (*work == nullptr) return COLLECTIVE_SUCCESS;
  const collective_work_t handle = *work;
  *work = nullptr;
  std::string why;
  if (!collective::capi::retire_work(handle, why)) {
    return fail_argument(operation, collective::capi::process_rank(), why);
  }
  return COLLECTIVE_SUCCESS;
}

}  // extern "C"
