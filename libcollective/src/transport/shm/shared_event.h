// An event count in memory shared between processes, which waiting
// processes can sleep on (a Linux futex on a MAP_SHARED mapping) until
// another process publishes something.
//
// Why: a rank that waits for a peer's progress should give its processor
// away when ranks outnumber processors, and sched_yield does not reliably
// do that (the scheduler may pick the yielding task again while it is owed
// time). A wait often has several ways forward (a progress loop may copy
// in, reduce or copy out, each gated by another flag), so a waiter sleeps
// on one counter that every publish bumps, not on one flag: whatever
// changes wakes it, and it re-checks everything.
//
//   publisher:  flag.store(v, std::memory_order_seq_cst); event.notify();
//               (several flags: release stores, then one seq_cst fence)
//   waiter:     EventSleeper sleeper(event);
//               while (!ready()) sleeper.sleep(limit);   // the first call only registers
// The publisher pays one load when nobody sleeps; a system call otherwise.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace collective::internal {

// Lives in shared memory; zeroed pages are a valid initial state.
struct SharedEvent {
  std::atomic<std::uint64_t> count;
  std::atomic<std::uint32_t> sleepers;

  // Call after a sequentially consistent store of what waiters look for
  // (or stores followed by a sequentially consistent fence):
  // wakes every sleeper, if there is one.
  void notify();
};

// One wait's registration as a sleeper on an event.
class EventSleeper {
 public:
  explicit EventSleeper(SharedEvent& event) : event_(event) {}
  ~EventSleeper() { stop(); }
  EventSleeper(const EventSleeper&) = delete;
  EventSleeper& operator=(const EventSleeper&) = delete;

  // The first call registers and returns at once, so that the caller checks
  // its conditions again with the registration visible to publishers. Each
  // later call sleeps until the event moved since the previous call
  // returned, or for at most `limit` (or a signal: callers re-check).
  void sleep(std::chrono::microseconds limit);
  // The wait made progress or ended: no longer a sleeper.
  void stop();

 private:
  SharedEvent& event_;
  bool registered_ = false;
  std::uint64_t seen_ = 0;
};

}  // namespace collective::internal
