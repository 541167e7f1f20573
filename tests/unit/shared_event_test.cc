// SharedEvent / EventSleeper (transport/shared_event.h) between two real
// processes sharing a mapping: a ping-pong of many rounds in which each
// side waits by sleeping only (no polling between sleeps), so a lost
// wake-up would stall the round for the whole sleep limit (60 s) and the
// test would hit its ctest timeout instead of finishing in a second.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <new>

#include "transport/shm/shared_event.h"

namespace collective::internal {
namespace {

struct Shared {
  SharedEvent event;
  std::atomic<std::uint64_t> ping;  // written by the parent
  std::atomic<std::uint64_t> pong;  // written by the child
};

constexpr std::uint64_t kRounds = 2000;
constexpr std::chrono::microseconds kLimit{60'000'000};

// Waits for `value` to reach `round` the way the library's waits do once
// they sleep: register, re-check, sleep, re-check.
void wait_for(SharedEvent& event, const std::atomic<std::uint64_t>& value, std::uint64_t round) {
  EventSleeper sleeper(event);
  while (value.load(std::memory_order_seq_cst) < round) sleeper.sleep(kLimit);
}

TEST(SharedEvent, PingPongBetweenProcessesLosesNoWakeUp) {
  void* memory =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  auto* shared = new (memory) Shared{};
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (std::uint64_t round = 1; round <= kRounds; ++round) {
      wait_for(shared->event, shared->ping, round);
      shared->pong.store(round, std::memory_order_seq_cst);
      shared->event.notify();
    }
    _exit(0);
  }
  for (std::uint64_t round = 1; round <= kRounds; ++round) {
    shared->ping.store(round, std::memory_order_seq_cst);
    shared->event.notify();
    wait_for(shared->event, shared->pong, round);
    ASSERT_EQ(shared->pong.load(), round);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status)) << "the child did not exit normally";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(shared->event.sleepers.load(), 0u) << "a sleeper registration leaked";
  munmap(memory, sizeof(Shared));
}

TEST(SharedEvent, NotifyWithoutSleepersLeavesTheCountAlone) {
  SharedEvent event{};
  event.notify();
  EXPECT_EQ(event.count.load(), 0u);
  {
    EventSleeper sleeper(event);
    sleeper.sleep(std::chrono::microseconds(1));  // registers only
    EXPECT_EQ(event.sleepers.load(), 1u);
    event.notify();
    EXPECT_EQ(event.count.load(), 1u);
    sleeper.sleep(std::chrono::microseconds(1));  // the count moved: returns at once
  }
  EXPECT_EQ(event.sleepers.load(), 0u);
}

}  // namespace
}  // namespace collective::internal
