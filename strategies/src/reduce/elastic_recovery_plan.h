// What each survivor of a lost worker does (elastic training;
// docs/strategies.md, "Elastic training"), decided from every survivor's
// report alike, so that all of them take decisions that fit together.
// WorkerCalls::recover exchanges the reports and carries the plan out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace collective::distribute::detail {

// Where a survivor's failed cross-worker call stood.
enum class FailedCall : std::uint8_t {
  kStepCall = 0,      // a call of a step (run()), before its commit
  kCommit = 1,        // the step's commit: every call of the step was done
  kBetweenSteps = 2,  // a call outside run(): reduce, gather, broadcast
};

enum class RecoveryDecision {
  kRedoStep,           // every survivor in this step redoes it
  kStepStands,         // the step was done everywhere; go on
  kCompletedFromPeer,  // this call was completed by another survivor: take its output
  kCallAgain,          // no survivor completed this call: make it on the survivors
};

// What a survivor tells the others (exchanged as 32 bytes).
struct RecoveryReport {
  std::uint64_t completed;       // cross-worker calls it completed
  std::uint64_t step;            // the step its failed call belongs to, or follows
  std::uint64_t output_bytes;    // between steps: its failed call's output
  std::uint8_t kind;             // FailedCall
  std::uint8_t has_last_output;  // it kept the output of its last completed call
  std::uint8_t padding[6];
};
static_assert(sizeof(RecoveryReport) == 32, "exchanged as 32 bytes");

struct RecoveryPlan {
  RecoveryDecision decision = RecoveryDecision::kRedoStep;
  // Bytes every survivor broadcasts from `source` (a survivor that completed
  // a call others failed), 0 when none needs it; source -1 with bytes > 0:
  // no survivor kept the output that another needs.
  std::uint64_t broadcast_bytes = 0;
  int source = -1;
};

// The plan of survivor `self` (its index in `reports`, one per survivor in
// the survivors' rank order).
RecoveryPlan plan_recovery(const std::vector<RecoveryReport>& reports, std::size_t self);

}  // namespace collective::distribute::detail
