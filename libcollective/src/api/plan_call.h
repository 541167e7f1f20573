// What a persistent plan shares with its queued starts: the call resolved
// at creation, and whether a start wakes the progress thread.
#pragma once

#include <atomic>
#include <utility>

#include "api/prepared_call.h"

namespace collective::internal {

struct PlanCall {
  explicit PlanCall(PreparedCall call) : prepared(std::move(call)) {}

  const PreparedCall prepared;
  // Learned from the plan's latest start (docs/architecture.md,
  // "Persistent plans"): false while the program waits for each start at
  // once, so that a start leaves its call to that wait() and wakes no
  // thread (the wake costs more than a small call); true when the progress
  // thread took the start, or the wait() came later than kWaitedAtOnce
  // (the program computes in between: the thread should take the next
  // start at once). Written by whoever takes a start off the queue; read
  // by start().
  std::atomic<bool> wake_on_start{false};
};

}  // namespace collective::internal
