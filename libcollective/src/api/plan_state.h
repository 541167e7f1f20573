// What a collective::Plan points to: its communicator, the call resolved
// at creation and the Work of its latest start.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/plan_call.h"
#include "api/prepared_call.h"
#include "api/work_state.h"
#include "collective/options.h"
#include "core/request.h"
#include "core/communicator_state.h"

namespace collective::internal {

class PlanState {
 public:
  // Registers the plan with the communicator's progress engine (made now
  // if the communicator had none), which the plans' watch then looks at
  // for starts nobody waits for (api/plan_start_watch.h).
  PlanState(std::shared_ptr<CommunicatorState> communicator, PreparedCall prepared);
  ~PlanState();
  PlanState(const PlanState&) = delete;
  PlanState& operator=(const PlanState&) = delete;

  // Queues one start in program order, waking the progress thread only
  // when the plan's starts are not waited for at once (api/plan_call.h);
  // raises when the previous start is unfinished or the communicator is
  // unusable.
  std::shared_ptr<WorkState> start();
  std::shared_ptr<WorkState> last_start() const;
  std::string describe() const;

 private:
  const std::shared_ptr<CommunicatorState> communicator_;
  // Shared with each queued start, which must not hold the communicator's
  // state: the progress thread would then release its own engine.
  const std::shared_ptr<PlanCall> call_;
  // The engine the plan registered with, unless the communicator was
  // released (and its engine gone) first.
  const std::shared_ptr<EngineAccess> engine_access_;
  mutable std::mutex mutex_;
  std::shared_ptr<WorkState> last_start_;
};

// A plan's creation (Communicator::X_init): waits for the calls in flight,
// then prepares `request` (prepare_call), the v-forms' spans copied.
std::shared_ptr<PlanState> prepare_plan(const std::shared_ptr<CommunicatorState>& state,
                                        Request request, const CommonOptions& options);

}  // namespace collective::internal
