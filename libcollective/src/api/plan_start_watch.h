// The watch over persistent plans' starts queued without waking their
// communicator's progress thread (api/plan_call.h): one thread per process
// that, every kPlanPollInterval while any plan lives, asks each engine
// with plans to take a start that has waited a whole interval
// (PlanStartSource::take_stale_plan_start). A start the program does not
// wait for therefore completes within two intervals on its own. One timer
// per interval for the process, rather than a timed sleep of each
// engine's thread, which sleeps once or twice per call.
#pragma once

#include <chrono>
#include <cstddef>

namespace collective::internal {

// What the watch looks at: a communicator's progress engine
// (api/progress_engine.h) while it has plans.
class PlanStartSource {
 public:
  // Wakes the engine's thread for a plan's start that was first in its
  // queue, unwoken, at the watch's previous look as well.
  virtual void take_stale_plan_start() = 0;

 protected:
  ~PlanStartSource() = default;
};

inline constexpr std::chrono::microseconds kPlanPollInterval{5000};

// A plan of `engine`'s communicator made: the watch looks at the engine
// from now on (and starts its thread on first use).
void plan_watch_add(PlanStartSource& engine);
// A plan gone; the watch sleeps while none lives in the process.
void plan_watch_remove();
// The engine goes, `plans_left` of its plans still alive (they no longer
// reach it): never looked at again once this returns.
void plan_watch_forget(PlanStartSource& engine, std::size_t plans_left);

}  // namespace collective::internal
