// Elastic training's step (CommunicationOptions::elastic; docs/strategies.md,
// "Elastic training"): one run() of a MultiWorkerMirroredStrategy that, when
// a worker dies, is redone on the survivors from the variables' values when
// it began, on its global batch cut anew over them (reduce/worker_calls.h
// decides, the same on every survivor, whether the step stands or is redone).
#pragma once

#include <functional>

namespace collective::distribute::detail {

struct StrategyImpl;

// Runs `attempt` (every local replica's function, its errors raised) and
// the step's commit; on a lost worker, recovers and redoes it as decided.
void run_elastic_step(StrategyImpl& impl, const std::function<void()>& attempt);

}  // namespace collective::distribute::detail
