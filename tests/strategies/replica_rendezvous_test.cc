// The rendezvous of local replica threads, by itself: an abort that comes
// while the last replica combines must not release the others before
// combine returns, because combine reads their payloads (a waiting replica
// that left would free its tensor under the combiner: heap-use-after-free
// under ASan in MultiWorker.DestroyedWhileAnotherThreadIsInsideRun).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "base/replica_rendezvous.h"

namespace collective::distribute::detail {
namespace {

using namespace std::chrono_literals;

TEST(ReplicaRendezvous, AbortDuringCombineWaitsForCombineToReturn) {
  ReplicaRendezvous rendezvous(2, 30s, "test", 0);
  std::atomic<bool> combining{false};
  std::atomic<bool> combine_returned{false};
  std::atomic<int> left_early{0};
  int payloads[2] = {7, 8};
  int seen_sum = 0;
  // Whichever replica arrives last combines; the other waits in sync().
  const ReplicaRendezvous::Combine combine = [&](std::span<void* const> all) {
    combining = true;
    std::this_thread::sleep_for(300ms);  // the abort lands in here
    seen_sum = *static_cast<int*>(all[0]) + *static_cast<int*>(all[1]);
    combine_returned = true;
  };
  auto replica = [&](int r) {
    try {
      rendezvous.sync(r, "sum", &payloads[r], combine);
    } catch (const std::exception&) {
    }
    if (!combine_returned) ++left_early;
  };
  std::thread replica0(replica, 0);
  std::thread replica1(replica, 1);
  while (!combining) std::this_thread::sleep_for(1ms);
  rendezvous.abort(std::make_exception_ptr(std::runtime_error("destroyed")));
  replica0.join();
  replica1.join();
  EXPECT_TRUE(combine_returned);
  EXPECT_EQ(left_early, 0) << "a replica returned from sync() while the other still combined over "
                              "its payload";
  EXPECT_EQ(seen_sum, 15);
  // Later calls fail at once with the abort's error.
  EXPECT_THROW(rendezvous.sync(0, "sum", &payloads[0], combine), std::runtime_error);
}

}  // namespace
}  // namespace collective::distribute::detail
