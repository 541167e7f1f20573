#include "reduce/elastic_recovery_plan.h"

#include <algorithm>

namespace collective::distribute::detail {

RecoveryPlan plan_recovery(const std::vector<RecoveryReport>& reports, std::size_t self) {
  const RecoveryReport& mine = reports[self];
  const auto kind_of = [](const RecoveryReport& report) {
    return static_cast<FailedCall>(report.kind);
  };
  // A worker completes a call only once every worker entered it, so the
  // survivors are at most one call apart: `most` is the furthest.
  std::uint64_t most = 0;
  bool step_call_failed = false;  // in this survivor's step, by any survivor
  for (const RecoveryReport& report : reports) {
    most = std::max(most, report.completed);
    step_call_failed |= kind_of(report) == FailedCall::kStepCall && report.step == mine.step;
  }
  RecoveryPlan plan;
  switch (kind_of(mine)) {
    case FailedCall::kStepCall: plan.decision = RecoveryDecision::kRedoStep; break;
    case FailedCall::kCommit:
      plan.decision =
          step_call_failed ? RecoveryDecision::kRedoStep : RecoveryDecision::kStepStands;
      break;
    case FailedCall::kBetweenSteps:
      plan.decision = mine.completed < most ? RecoveryDecision::kCompletedFromPeer
                                            : RecoveryDecision::kCallAgain;
      break;
  }
  // A call between steps that some survivor completed and others failed:
  // the first survivor that completed it sends its output to all.
  for (std::size_t r = 0; r < reports.size(); ++r) {
    const RecoveryReport& report = reports[r];
    if (kind_of(report) == FailedCall::kBetweenSteps && report.completed < most) {
      plan.broadcast_bytes = std::max(plan.broadcast_bytes, report.output_bytes);
    }
    if (plan.source < 0 && report.completed == most && report.has_last_output) {
      plan.source = static_cast<int>(r);
    }
  }
  if (plan.broadcast_bytes == 0) plan.source = -1;
  return plan;
}

}  // namespace collective::distribute::detail
