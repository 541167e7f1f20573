// Sleeping on a 64-bit counter in memory shared between processes, until
// another process changes it (a Linux futex on a MAP_SHARED mapping).
//
// A rank that waits for a peer's progress flag should give its processor
// away when ranks outnumber processors: sched_yield does not do that
// reliably (the scheduler may pick the yielding task again when it is owed
// time), so a waiter that has yielded for a while sleeps here and the
// writer wakes it. The writer pays one load per publish when nobody
// sleeps, and one system call when somebody does.
//
//   waiter:  while ((v = value.load()) < round) sleep_while(value, sleepers, v, limit);
//   writer:  store_and_wake(value, sleepers, round);
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace collective::internal {

// Both live in shared memory: `value`, and `sleepers`, the number of
// processes asleep on it (zeroed pages are a valid initial state). One
// `sleepers` may serve several values; a wake then costs a system call
// that finds nobody on the others.
//
// Publishes `new_value` (sequentially consistent, so that a sleeper
// registered before this store is seen after it) and wakes every process
// asleep on `value`.
void store_and_wake(std::atomic<std::uint64_t>& value, std::atomic<std::uint32_t>& sleepers,
                    std::uint64_t new_value);

// Sleeps until `value` changes from `seen` or `limit` passes (or a signal
// or spurious wake-up: callers re-check). Returns at once when `value` no
// longer holds `seen`.
void sleep_while(std::atomic<std::uint64_t>& value, std::atomic<std::uint32_t>& sleepers,
                 std::uint64_t seen, std::chrono::microseconds limit);

}  // namespace collective::internal
