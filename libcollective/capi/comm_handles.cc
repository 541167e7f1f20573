#include "comm_handles.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace collective::capi {
namespace {

// The low bits mark the value as one of ours; the rest is the serial.
constexpr std::uintptr_t kTagBits = 4;
constexpr std::uintptr_t kTag = 0xA;

struct CommRegistry {
  std::shared_mutex mutex;
  std::unordered_map<std::uintptr_t, std::shared_ptr<CommEntry>> live;
  std::uintptr_t next_serial = 1;
};

CommRegistry& comm_registry() {
  // Never destroyed: handles may be freed from atexit handlers and
  // destructors of static objects that run after this file's statics.
  static CommRegistry* instance = new CommRegistry;
  return *instance;
}

std::atomic<int> g_process_rank{-1};

// Moves whenever a handle is retired: a thread's cached lookup is good
// while it has not moved.
std::atomic<std::uint64_t> g_retirements{0};

// This thread's last lookup: plain values (constant-initialized, so the
// fast path reads them without a TLS guard), and the reference that keeps
// the entry alive, touched only on the slow path.
struct LastLookup {
  std::uintptr_t value = 0;
  std::uint64_t retirements = 0;
  CommEntry* entry = nullptr;
};
thread_local constinit LastLookup t_last;
thread_local std::shared_ptr<CommEntry> t_held;

std::uintptr_t value_of(collective_comm_t handle) {
  return reinterpret_cast<std::uintptr_t>(handle);
}

std::string describe(collective_comm_t handle) {
  char text[48];
  std::snprintf(text, sizeof text, "%p", static_cast<const void*>(handle));
  return std::string("communicator handle ") + text;
}

// Why `handle` is not live (the registry's lock held).
std::string why_not_live_locked(collective_comm_t handle, const CommRegistry& state) {
  const std::uintptr_t value = value_of(handle);
  const std::uintptr_t serial = value >> kTagBits;
  if ((value & ((std::uintptr_t{1} << kTagBits) - 1)) == kTag && serial >= 1 &&
      serial < state.next_serial) {
    return describe(handle) +
           " was freed by collective_comm_free (a copy of a handle is the same handle: freeing "
           "it through any copy frees it for every copy)";
  }
  return describe(handle) +
         " was never issued by this library (not a value that collective_comm_world, "
         "collective_comm_from_fint or collective_comm_split returned; uninitialized or "
         "corrupted?)";
}

}  // namespace

collective_comm_t issue_handle(Communicator communicator) {
  auto entry = std::make_shared<CommEntry>(CommEntry{std::move(communicator)});
  CommRegistry& state = comm_registry();
  std::unique_lock lock(state.mutex);
  const std::uintptr_t value = (state.next_serial++ << kTagBits) | kTag;
  state.live.emplace(value, std::move(entry));
  return reinterpret_cast<collective_comm_t>(value);
}

CommEntry* borrow_handle(collective_comm_t handle) {
  const std::uintptr_t value = value_of(handle);
  const std::uint64_t retirements = g_retirements.load(std::memory_order_acquire);
  LastLookup& last = t_last;
  if (last.entry != nullptr && last.value == value && last.retirements == retirements) {
    return last.entry;
  }
  CommRegistry& state = comm_registry();
  std::shared_lock lock(state.mutex);
  const auto found = state.live.find(value);
  if (found == state.live.end()) return nullptr;
  t_held = found->second;
  last = LastLookup{value, retirements, t_held.get()};
  return last.entry;
}

std::string why_not_live(collective_comm_t handle) {
  CommRegistry& state = comm_registry();
  std::shared_lock lock(state.mutex);
  return why_not_live_locked(handle, state);
}

std::shared_ptr<CommEntry> retire_handle(collective_comm_t handle, std::string& why) {
  CommRegistry& state = comm_registry();
  std::unique_lock lock(state.mutex);
  const auto found = state.live.find(value_of(handle));
  if (found == state.live.end()) {
    why = why_not_live_locked(handle, state);
    return nullptr;
  }
  std::shared_ptr<CommEntry> entry = std::move(found->second);
  state.live.erase(found);
  g_retirements.fetch_add(1, std::memory_order_release);
  if (t_last.value == value_of(handle)) {
    t_last = LastLookup{};
    t_held.reset();
  }
  return entry;
}

int process_rank() { return g_process_rank.load(std::memory_order_relaxed); }
void note_process_rank(int rank) { g_process_rank.store(rank, std::memory_order_relaxed); }

}  // namespace collective::capi
