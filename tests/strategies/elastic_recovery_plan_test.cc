// Elastic training's recovery decisions (strategies/src/reduce/
// elastic_recovery_plan.h), for every way the survivors can stand when a
// worker dies: each survivor's decision, and the broadcast every survivor
// must join alike. The fault tests (elastic_train.py) reach these cases by
// timing; here each one is forced.
#include <gtest/gtest.h>

#include <vector>

#include "reduce/elastic_recovery_plan.h"

namespace {

using collective::distribute::detail::FailedCall;
using collective::distribute::detail::plan_recovery;
using collective::distribute::detail::RecoveryDecision;
using collective::distribute::detail::RecoveryPlan;
using collective::distribute::detail::RecoveryReport;

RecoveryReport report(FailedCall kind, std::uint64_t step, std::uint64_t completed,
                      std::uint64_t output_bytes = 0, bool has_last_output = false) {
  RecoveryReport made{};
  made.kind = static_cast<std::uint8_t>(kind);
  made.step = step;
  made.completed = completed;
  made.output_bytes = output_bytes;
  made.has_last_output = has_last_output ? 1 : 0;
  return made;
}

// Every survivor's plan, checking that all join the same broadcast.
std::vector<RecoveryPlan> plans(const std::vector<RecoveryReport>& reports) {
  std::vector<RecoveryPlan> all;
  for (std::size_t r = 0; r < reports.size(); ++r) all.push_back(plan_recovery(reports, r));
  for (std::size_t r = 1; r < all.size(); ++r) {
    EXPECT_EQ(all[r].broadcast_bytes, all[0].broadcast_bytes) << "survivor " << r;
    EXPECT_EQ(all[r].source, all[0].source) << "survivor " << r;
  }
  return all;
}

TEST(ElasticRecoveryPlan, StepCallsFailedEverywhereRedoTheStep) {
  const auto all = plans({report(FailedCall::kStepCall, 5, 10), report(FailedCall::kStepCall, 5, 9),
                          report(FailedCall::kStepCall, 5, 10)});
  for (const RecoveryPlan& plan : all) EXPECT_EQ(plan.decision, RecoveryDecision::kRedoStep);
  EXPECT_EQ(all[0].broadcast_bytes, 0u);
}

TEST(ElasticRecoveryPlan, CommitReachedWhileAnotherFailedAStepCallRedoes) {
  // Survivor 0 completed the step's last call and failed the commit;
  // survivor 1 failed that last call: the step is not done everywhere.
  const auto all = plans({report(FailedCall::kCommit, 5, 10), report(FailedCall::kStepCall, 5, 9)});
  EXPECT_EQ(all[0].decision, RecoveryDecision::kRedoStep);
  EXPECT_EQ(all[1].decision, RecoveryDecision::kRedoStep);
}

TEST(ElasticRecoveryPlan, EveryoneAtTheCommitStands) {
  const auto all = plans({report(FailedCall::kCommit, 5, 10), report(FailedCall::kCommit, 5, 10)});
  for (const RecoveryPlan& plan : all) EXPECT_EQ(plan.decision, RecoveryDecision::kStepStands);
}

TEST(ElasticRecoveryPlan, CommitFailedWhileAnotherIsInTheNextStep) {
  // Survivor 1 completed the commit and failed the next step's first call.
  const auto all =
      plans({report(FailedCall::kCommit, 5, 10), report(FailedCall::kStepCall, 6, 11)});
  EXPECT_EQ(all[0].decision, RecoveryDecision::kStepStands);
  EXPECT_EQ(all[1].decision, RecoveryDecision::kRedoStep);
  EXPECT_EQ(all[0].broadcast_bytes, 0u);
}

TEST(ElasticRecoveryPlan, CommitFailedWhileAnotherFailedTheCallAfterTheStep) {
  const auto all = plans(
      {report(FailedCall::kCommit, 5, 10), report(FailedCall::kBetweenSteps, 5, 11, 8, false)});
  EXPECT_EQ(all[0].decision, RecoveryDecision::kStepStands);
  EXPECT_EQ(all[1].decision, RecoveryDecision::kCallAgain);
  EXPECT_EQ(all[0].broadcast_bytes, 0u);
}

TEST(ElasticRecoveryPlan, ACallBetweenStepsCompletedByOneIsSentToTheOthers) {
  // Survivors 0 and 2 failed call 12 (8 bytes of output); survivor 1
  // completed it, kept its output, and failed call 13.
  const auto all = plans({report(FailedCall::kBetweenSteps, 5, 11, 8, false),
                          report(FailedCall::kBetweenSteps, 5, 12, 16, true),
                          report(FailedCall::kBetweenSteps, 5, 11, 8, false)});
  EXPECT_EQ(all[0].decision, RecoveryDecision::kCompletedFromPeer);
  EXPECT_EQ(all[1].decision, RecoveryDecision::kCallAgain);
  EXPECT_EQ(all[2].decision, RecoveryDecision::kCompletedFromPeer);
  EXPECT_EQ(all[0].broadcast_bytes, 8u);
  EXPECT_EQ(all[0].source, 1);
}

TEST(ElasticRecoveryPlan, TheSenderMayAlreadyBeInTheNextStep) {
  const auto all = plans({report(FailedCall::kBetweenSteps, 5, 11, 4, false),
                          report(FailedCall::kStepCall, 6, 12, 0, true),
                          report(FailedCall::kStepCall, 6, 12, 0, true)});
  EXPECT_EQ(all[0].decision, RecoveryDecision::kCompletedFromPeer);
  EXPECT_EQ(all[1].decision, RecoveryDecision::kRedoStep);
  EXPECT_EQ(all[2].decision, RecoveryDecision::kRedoStep);
  EXPECT_EQ(all[0].broadcast_bytes, 4u);
  EXPECT_EQ(all[0].source, 1);  // the first of those that completed it
}

TEST(ElasticRecoveryPlan, NoSurvivorKeptTheOutputIsReported) {
  const auto all = plans({report(FailedCall::kBetweenSteps, 5, 11, 8, false),
                          report(FailedCall::kBetweenSteps, 5, 12, 8, false)});
  EXPECT_EQ(all[0].broadcast_bytes, 8u);
  EXPECT_EQ(all[0].source, -1);
}

TEST(ElasticRecoveryPlan, NobodyCompletedTheCallBetweenStepsMakesItAgain) {
  const auto all = plans({report(FailedCall::kBetweenSteps, 5, 11, 8, true),
                          report(FailedCall::kBetweenSteps, 5, 11, 8, true)});
  for (const RecoveryPlan& plan : all) EXPECT_EQ(plan.decision, RecoveryDecision::kCallAgain);
  EXPECT_EQ(all[0].broadcast_bytes, 0u);
  EXPECT_EQ(all[0].source, -1);
}

}  // namespace
