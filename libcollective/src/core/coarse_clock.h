// The steady clock read at the kernel's tick (CLOCK_MONOTONIC_COARSE): the
// same time line as Clock (libstdc++'s steady_clock is CLOCK_MONOTONIC), at
// most one tick (1-4 ms) behind it, read from the vDSO's data page without
// the timestamp counter. Used where every call reads the time and a tick
// is precise enough: a call's start and deadline, the end of its flight
// record. A precise read costs a small call 30-60 ns (docs/performance.md).
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

#include "core/request.h"

namespace collective::internal {

inline std::int64_t coarse_now_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

inline Clock::time_point coarse_now() {
  return Clock::time_point(
      std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(coarse_now_ns())));
}

}  // namespace collective::internal
