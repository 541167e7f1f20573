// The handoff tuner's choices (transport/shm/two_way_tuner.h), driven by a
// clock the test sets: when calls try the other way, that the leader
// publishes the faster way per size class and follows the machine when it
// changes, that new classes start from the last decision, and that forced
// ways and followers measure nothing.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "transport/shm/two_way_tuner.h"

namespace collective::internal {
namespace {

constexpr std::size_t kBytes = 1 << 20;

int class_of(std::size_t bytes) { return std::bit_width(bytes) - 1; }

class HandoffTunerTest : public testing::Test {
 protected:
  HandoffTunerTest() { std::memset(static_cast<void*>(&board_), 0, sizeof(board_)); }

  HandoffTuner leader() {
    return HandoffTuner(board_, true, std::nullopt, "calls of", "hand data over", false,
                        [this] { return now_; });
  }
  // One call of `bytes`, taking `cache_seconds` or `memory_seconds` by the
  // way chosen; returns the choice.
  HandoffTuner::Choice call(HandoffTuner& tuner, double cache_seconds, double memory_seconds,
                            std::size_t bytes = kBytes) {
    const HandoffTuner::Choice choice = tuner.choose(bytes);
    now_ += choice.way == Handoff::kThroughCache ? cache_seconds : memory_seconds;
    tuner.record(choice, bytes);
    return choice;
  }
  // 0: undecided, else 1 + Handoff.
  int published(std::size_t bytes = kBytes) const {
    return board_.preferred[class_of(bytes)].load();
  }
  static constexpr int kCache = 1;
  static constexpr int kMemory = 2;

  HandoffBoard board_;
  double now_ = 0;
};

TEST_F(HandoffTunerTest, TrialsAreOfferedAboutOnceInSixtyFourCalls) {
  int offered = 0;
  for (std::uint64_t call = 0; call < 64000; ++call) offered += HandoffTuner::trial_offered(call);
  EXPECT_GT(offered, 800);
  EXPECT_LT(offered, 1200);
}

TEST_F(HandoffTunerTest, FirstTrialOnAClassThirdCallThenAsOffered) {
  HandoffTuner tuner = leader();
  bool pending = true;  // the first offer is made before any call
  for (std::uint64_t i = 0; i < 500; ++i) {
    if (HandoffTuner::trial_offered(i)) pending = true;
    const bool expected = pending && i >= 2;
    if (expected) pending = false;
    const HandoffTuner::Choice choice = call(tuner, 1e-3, 2e-3);
    EXPECT_EQ(choice.trial, expected) << "call " << i;
    EXPECT_EQ(choice.way, expected ? Handoff::kThroughMemory : Handoff::kThroughCache)
        << "call " << i;
  }
  EXPECT_EQ(published(), kCache);
}

TEST_F(HandoffTunerTest, LeaderFollowsTheMachineBothWays) {
  HandoffTuner tuner = leader();
  for (int i = 0; i < 20; ++i) call(tuner, 1e-3, 2e-3);
  EXPECT_EQ(published(), kCache);
  // The cache way becomes 3x slower: the calls in use measure it at once
  // and move to memory (whose last trial is known) within a few calls.
  int moved_after = -1;
  for (int i = 0; i < 10 && moved_after < 0; ++i) {
    call(tuner, 3e-3, 2e-3);
    if (published() == kMemory) moved_after = i + 1;
  }
  ASSERT_GT(moved_after, 0) << "never moved to memory";
  EXPECT_LE(moved_after, 3);
  // The cache recovers, which only a trial can see: back within a few
  // offers (about 64 calls each).
  int calls = 0;
  while (published() == kMemory && calls < 800) {
    call(tuner, 1e-3, 2e-3);
    ++calls;
  }
  EXPECT_EQ(published(), kCache) << "after " << calls << " calls";
}

TEST_F(HandoffTunerTest, EachClassDecidesAndNewClassesStartFromTheLastDecision) {
  HandoffTuner tuner = leader();
  constexpr std::size_t kSmall = 4096;
  // Alternating sizes: both classes get trials (the schedule is not
  // periodic), and each keeps its own answer.
  for (int i = 0; i < 300; ++i) {
    call(tuner, 1e-6, 3e-6, kSmall);
    call(tuner, 3e-3, 1e-3);
  }
  EXPECT_EQ(published(kSmall), kCache);
  EXPECT_EQ(published(kBytes), kMemory);
  // The last decision was the large class's: a new class starts there.
  const HandoffTuner::Choice first = tuner.choose(std::size_t{64} << 20);
  EXPECT_EQ(first.way, Handoff::kThroughMemory);
  EXPECT_FALSE(first.trial);
}

TEST_F(HandoffTunerTest, FollowersReadTheBoardTryOnTheSameCallsAndNeverWrite) {
  HandoffTuner leading = leader();
  HandoffTuner following(board_, false, std::nullopt, "calls of", "hand data over", false,
                         [this] { return now_; });
  for (int i = 0; i < 300; ++i) {
    const HandoffTuner::Choice led = call(leading, 3e-3, 1e-3);
    const HandoffTuner::Choice followed = following.choose(kBytes);
    EXPECT_EQ(followed.trial, led.trial) << "call " << i;
    EXPECT_FALSE(followed.timed);
    following.record(followed, kBytes);
    // The follower reads the board after the leader's call has published.
    if (i > 10) {
      EXPECT_EQ(followed.way, led.way) << "call " << i;
    }
  }
  HandoffBoard before;
  std::memcpy(static_cast<void*>(&before), &board_, sizeof(board_));
  for (int i = 0; i < 100; ++i) {
    const HandoffTuner::Choice followed = following.choose(kBytes);
    now_ += 5.0;
    following.record(followed, kBytes);
  }
  EXPECT_EQ(std::memcmp(static_cast<void*>(&before), &board_, sizeof(board_)), 0)
      << "a follower wrote the board";
}

TEST_F(HandoffTunerTest, AForcedWayIsAlwaysTakenAndNothingIsPublished) {
  for (const Handoff forced : {Handoff::kThroughCache, Handoff::kThroughMemory}) {
    HandoffTuner tuner(board_, true, forced, "calls of", "hand data over", false,
                       [this] { return now_; });
    for (int i = 0; i < 100; ++i) {
      const bool cache = forced == Handoff::kThroughCache;
      EXPECT_EQ(call(tuner, cache ? 9.0 : 1.0, cache ? 1.0 : 9.0).way, forced);
    }
    EXPECT_EQ(published(), 0);
  }
}

}  // namespace
}  // namespace collective::internal
