// The handoff tuner's choices (algorithms/handoff_tuner.h), driven by a
// clock the test sets: which calls try the other way, that the leader
// publishes the faster way per size class and follows the machine when it
// changes, and that forced ways and followers measure nothing.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "algorithms/handoff_tuner.h"

namespace collective::internal {
namespace {

constexpr std::size_t kBytes = 1 << 20;

class HandoffTunerTest : public testing::Test {
 protected:
  HandoffTunerTest() { std::memset(static_cast<void*>(&board_), 0, sizeof(board_)); }

  HandoffTuner leader() {
    return HandoffTuner(board_, true, std::nullopt, [this] { return now_; });
  }
  // One call of kBytes, taking `cache_seconds` or `memory_seconds` by the
  // way chosen; returns the way.
  Handoff call(HandoffTuner& tuner, double cache_seconds, double memory_seconds) {
    const HandoffTuner::Choice choice = tuner.choose(kBytes);
    now_ += choice.handoff == Handoff::kThroughCache ? cache_seconds : memory_seconds;
    tuner.record(choice, kBytes);
    return choice.handoff;
  }
  Handoff published(std::size_t bytes = kBytes) const {
    return static_cast<Handoff>(board_.preferred[std::bit_width(bytes) - 1].load());
  }

  HandoffBoard board_;
  double now_ = 0;
};

TEST_F(HandoffTunerTest, TrialsComeEarlyThenEverySixtyFourthCall) {
  for (std::uint64_t i = 0; i < 400; ++i) {
    const bool expected = i == 1 || i == 3 || i == 7 || i == 15 || i == 31 ||
                          (i >= 63 && i % 64 == 63);
    EXPECT_EQ(HandoffTuner::is_trial(i), expected) << "call " << i;
  }
}

TEST_F(HandoffTunerTest, LeaderPublishesTheFasterWayAndFollowsAChange) {
  HandoffTuner tuner = leader();
  // The cache is faster: after the first trial of memory, cache stays.
  for (int i = 0; i < 20; ++i) call(tuner, 1e-3, 2e-3);
  EXPECT_EQ(published(), Handoff::kThroughCache);
  // The machine changes: the cache way becomes 3x slower. The calls in use
  // measure it at once and move to memory within a few calls.
  int moved_after = -1;
  for (int i = 0; i < 10 && moved_after < 0; ++i) {
    call(tuner, 3e-3, 2e-3);
    if (published() == Handoff::kThroughMemory) moved_after = i + 1;
  }
  ASSERT_GT(moved_after, 0) << "never moved to memory";
  EXPECT_LE(moved_after, 3);
  // Memory is now in use; the cache recovers, which only a trial can see.
  // Within one trial period the leader is back on the cache.
  int calls = 0;
  while (published() == Handoff::kThroughMemory && calls < 64) {
    call(tuner, 1e-3, 2e-3);
    ++calls;
  }
  EXPECT_EQ(published(), Handoff::kThroughCache) << "after " << calls << " calls";
}

TEST_F(HandoffTunerTest, EachSizeClassChoosesForItself) {
  HandoffTuner tuner = leader();
  for (int i = 0; i < 20; ++i) {
    const HandoffTuner::Choice small = tuner.choose(4096);
    now_ += small.handoff == Handoff::kThroughCache ? 1e-6 : 3e-6;
    tuner.record(small, 4096);
    call(tuner, 3e-3, 1e-3);
  }
  EXPECT_EQ(published(4096), Handoff::kThroughCache);
  EXPECT_EQ(published(kBytes), Handoff::kThroughMemory);
}

TEST_F(HandoffTunerTest, FollowersReadTheBoardAndTryOnTheSameCalls) {
  HandoffTuner follower(board_, false, std::nullopt, [this] { return now_; });
  board_.preferred[std::bit_width(kBytes) - 1].store(
      static_cast<std::uint8_t>(Handoff::kThroughMemory));
  for (std::uint64_t i = 0; i < 100; ++i) {
    const HandoffTuner::Choice choice = follower.choose(kBytes);
    EXPECT_EQ(choice.trial, HandoffTuner::is_trial(i));
    EXPECT_EQ(choice.handoff, choice.trial ? Handoff::kThroughCache : Handoff::kThroughMemory);
    now_ += 1.0;
    follower.record(choice, kBytes);
  }
  EXPECT_EQ(published(), Handoff::kThroughMemory) << "a follower wrote the board";
}

TEST_F(HandoffTunerTest, AForcedWayIsAlwaysTakenAndNothingIsPublished) {
  for (const Handoff forced : {Handoff::kThroughCache, Handoff::kThroughMemory}) {
    HandoffTuner tuner(board_, true, forced, [this] { return now_; });
    for (int i = 0; i < 100; ++i) {
      EXPECT_EQ(call(tuner, forced == Handoff::kThroughCache ? 9.0 : 1.0,
                     forced == Handoff::kThroughCache ? 1.0 : 9.0),
                forced);
    }
    EXPECT_EQ(published(), Handoff::kThroughCache);
  }
}

}  // namespace
}  // namespace collective::internal
