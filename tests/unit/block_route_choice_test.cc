// The route choice of shared_memory's block exchanges
// (algorithms/block_route_choice.h), driven as the exchange drives it: the
// leader proposes a route in a call's first hand-off, learns there the
// slowest rank's time of the previous routed call, then the call runs.
#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "algorithms/block_route_choice.h"
#include "core/block_route.h"

namespace collective::internal {
namespace {

constexpr std::size_t kBlockBytes = std::size_t{1} << 20;

// One routed call of `kind` where the slots take `slots` seconds and the
// kernel's copy `kernel` (the slowest rank's time, as the reports bring it).
struct Driver {
  BlockRouteChoice choice{true, std::nullopt};
  double last_seconds = 0;
  BlockRoute call(CollectiveKind kind, double slots, double kernel,
                  std::size_t bytes = kBlockBytes) {
    choice.exchange_started();
    const BlockRoute route = choice.propose(kind, bytes);
    choice.learn(choice.report().call, last_seconds);
    choice.begin_routed();
    choice.end_routed();
    last_seconds = route == BlockRoute::kSlots ? slots : kernel;
    return route;
  }
};

int slots_taken(Driver& driver, CollectiveKind kind, int calls, double slots, double kernel) {
  int taken = 0;
  for (int i = 0; i < calls; ++i) taken += driver.call(kind, slots, kernel) == BlockRoute::kSlots;
  return taken;
}

TEST(BlockRouteChoiceTest, StartsWithTheKernelsCopyAndFollowsTheFasterRoute) {
  Driver driver;
  EXPECT_EQ(driver.call(CollectiveKind::kAllToAll, 1e-3, 2e-3), BlockRoute::kKernelCopy);
  // The slots twice as fast: after the first trial, the slots but for trials.
  EXPECT_GE(slots_taken(driver, CollectiveKind::kAllToAll, 300, 1e-3, 2e-3), 280);
  // The machine changes: back to the kernel's copy once a trial notices.
  slots_taken(driver, CollectiveKind::kAllToAll, 300, 4e-3, 2e-3);
  EXPECT_LE(slots_taken(driver, CollectiveKind::kAllToAll, 300, 4e-3, 2e-3), 20);
}

TEST(BlockRouteChoiceTest, ARoutesFirstCallIsNotLearnedAndIsTriedAgainSoon) {
  Driver driver;
  // The slots' first call makes their pages: a thousand times slower. Were
  // it learned, the kernel's copy would stay until the schedule's next
  // trial; the slots are tried again at the next chance instead (the call
  // after the one after the trial, whose hand-off brought the reports).
  // Call 6 is also the schedule's next offered trial.
  bool first_slots = true;
  std::vector<BlockRoute> routes;
  for (int i = 0; i < 20; ++i) {
    routes.push_back(driver.call(CollectiveKind::kAllToAll, first_slots ? 1.0 : 1e-3, 2e-3));
    if (routes.back() == BlockRoute::kSlots) first_slots = false;
  }
  EXPECT_EQ(routes[2], BlockRoute::kSlots) << "the class's first trial";
  EXPECT_EQ(routes[3], BlockRoute::kKernelCopy);
  EXPECT_EQ(routes[4], BlockRoute::kSlots) << "tried again at once";
  // It won; the next chance confirms (call 6), and the slots are taken
  // from the call after the one whose hand-off brought that.
  EXPECT_EQ(routes[5], BlockRoute::kKernelCopy);
  EXPECT_EQ(routes[6], BlockRoute::kSlots) << "the confirming trial";
  EXPECT_EQ(routes[7], BlockRoute::kKernelCopy);
  for (int i = 8; i < 20; ++i) EXPECT_EQ(routes[i], BlockRoute::kSlots) << "call " << i;
}

TEST(BlockRouteChoiceTest, ARouteFiveTimesSlowerIsTriedRarelyAndStillNoticed) {
  Driver driver;
  // Without backing off, one call in 64 would try the slots: 31 in 2000.
  const int tried = slots_taken(driver, CollectiveKind::kGather, 2000, 10e-3, 2e-3);
  EXPECT_LE(tried, 10);
  EXPECT_GE(tried, 2);
  // The slots become the faster: a later trial still finds it (at most
  // 16 offered trials, about a thousand calls, later).
  slots_taken(driver, CollectiveKind::kGather, 1500, 1e-3, 2e-3);
  EXPECT_GE(slots_taken(driver, CollectiveKind::kGather, 100, 1e-3, 2e-3), 95);
}

TEST(BlockRouteChoiceTest, OnlyAClearGainChangesTheRoute) {
  Driver driver;
  // The slots 1.15x faster: within what one noisy trial decides, kept.
  EXPECT_LE(slots_taken(driver, CollectiveKind::kGatherV, 300, 1.74e-3, 2e-3), 10);
  // 1.4x faster: taken.
  slots_taken(driver, CollectiveKind::kGatherV, 300, 1.43e-3, 2e-3);
  EXPECT_GE(slots_taken(driver, CollectiveKind::kGatherV, 300, 1.43e-3, 2e-3), 280);
}

TEST(BlockRouteChoiceTest, OneDelayedCallDoesNotChangeTheRoute) {
  Driver driver;
  slots_taken(driver, CollectiveKind::kAllGatherV, 100, 2.2e-3, 2e-3);
  // One call of the kernel's copy ten times late (the process was
  // descheduled): the median of the last calls does not move.
  driver.call(CollectiveKind::kAllGatherV, 2.2e-3, 20e-3);
  EXPECT_LE(slots_taken(driver, CollectiveKind::kAllGatherV, 50, 2.2e-3, 2e-3), 2);
}

TEST(BlockRouteChoiceTest, OneLuckyTrialDoesNotChangeTheRoute) {
  Driver driver;
  // The slots' second call (its first warm one) is four times faster than
  // all the others: the confirming trial is not, and the route stays.
  int slots_calls = 0;
  int slots = 0;
  for (int i = 0; i < 300; ++i) {
    const double slots_seconds = slots_calls == 1 ? 0.5e-3 : 2.2e-3;
    if (driver.call(CollectiveKind::kAllToAll, slots_seconds, 2e-3) == BlockRoute::kSlots) {
      ++slots_calls;
      ++slots;
    }
  }
  EXPECT_LE(slots, 12);
}

TEST(BlockRouteChoiceTest, OneSenderKindsAlwaysTakeTheKernelsCopy) {
  for (const CollectiveKind kind :
       {CollectiveKind::kScatter, CollectiveKind::kScatterV, CollectiveKind::kBroadcast}) {
    Driver driver;
    EXPECT_EQ(slots_taken(driver, kind, 300, 1e-4, 2e-3), 0) << to_string(kind);
  }
}

TEST(BlockRouteChoiceTest, EachKindLearnsApart) {
  Driver driver;
  slots_taken(driver, CollectiveKind::kGather, 300, 1e-3, 2e-3);
  // all_to_all has measured nothing: the kernel's copy but for its trials.
  EXPECT_LE(slots_taken(driver, CollectiveKind::kAllToAll, 3, 1e-3, 2e-3), 1);
}

TEST(BlockRouteChoiceTest, ReportsOfAnotherCallTeachNothing) {
  BlockRouteChoice choice(true, std::nullopt);
  // Every call's reports name a call other than the one chosen for (a rank
  // failed in between): nothing is learned, the default stays.
  for (int i = 0; i < 300; ++i) {
    const BlockRoute route = choice.propose(CollectiveKind::kAllToAll, kBlockBytes);
    choice.learn(choice.report().call + 7, route == BlockRoute::kSlots ? 1e-6 : 1.0);
    choice.begin_routed();
    choice.end_routed();
  }
  int slots = 0;
  for (int i = 0; i < 64; ++i) {
    slots += choice.propose(CollectiveKind::kAllToAll, kBlockBytes) == BlockRoute::kSlots;
    choice.begin_routed();
    choice.end_routed();
  }
  EXPECT_LE(slots, 4) << "only trials take the slots";
}

TEST(BlockRouteChoiceTest, SmallBlocksAndFollowersAreNotChosenFor) {
  Driver driver;
  slots_taken(driver, CollectiveKind::kAllToAll, 300, 1e-3, 2e-3);
  EXPECT_EQ(driver.choice.propose(CollectiveKind::kAllToAll, kCrossMemoryAttachBytes - 1),
            BlockRoute::kKernelCopy);
  BlockRouteChoice follower(false, std::nullopt);
  EXPECT_EQ(follower.propose(CollectiveKind::kAllToAll, kBlockBytes), BlockRoute::kKernelCopy);
  // A follower still reports its routed calls, numbered from 1.
  follower.exchange_started();
  follower.begin_routed();
  follower.end_routed();
  EXPECT_EQ(follower.report().call, 1u);
  EXPECT_GE(follower.report().seconds, 0.0);
  EXPECT_LT(follower.report().seconds, 1.0);
}

TEST(BlockRouteChoiceTest, ForcedRouteAlways) {
  for (const BlockRoute forced : {BlockRoute::kKernelCopy, BlockRoute::kSlots}) {
    BlockRouteChoice choice(true, forced);
    for (int i = 0; i < 200; ++i) {
      EXPECT_EQ(choice.propose(CollectiveKind::kAllGatherV, kBlockBytes), forced) << "call " << i;
      choice.learn(choice.report().call, forced == BlockRoute::kSlots ? 9.0 : 1.0);
      choice.begin_routed();
      choice.end_routed();
    }
  }
}

}  // namespace
}  // namespace collective::internal
