// Persistent plans (collective/plan.h) with real processes: many start and
// wait rounds with the buffers rewritten between starts, exact in every
// element (counts 0, 7 and 70001, in place and out, int64 and float64);
// starts mixed with blocking and `_async` calls, and started while another
// call is in flight; misuse: a start while the previous one is unfinished,
// a plan destroyed with a start in flight, a rank that starts another plan
// or its plans in another order, a mismatch at creation. The order between
// ranks is forced by a second communicator, never by a sleep. Starts
// that complete on their own while the caller computes or is blocked on
// another communicator.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace {

using collective::Communicator;
using collective::DataType;
using collective::Plan;
using collective::Work;

Communicator& world() {
  static Communicator comm = Communicator::world();
  return comm;
}

// The test's own signals between ranks, in an order no call on world()
// can disturb.
Communicator& side() {
  static Communicator comm = world().split(0, world().rank());
  return comm;
}

// Rank r's element i in round `round`: small integers, exact in float64 too.
std::int64_t value(int rank, std::size_t i, int round) {
  return static_cast<std::int64_t>(
             (i * 7 + static_cast<std::size_t>(rank) * 13 + static_cast<std::size_t>(round) * 31) %
             1009) -
         500;
}

std::int64_t expected_sum(int ranks, std::size_t i, int round) {
  std::int64_t sum = 0;
  for (int r = 0; r < ranks; ++r) sum += value(r, i, round);
  return sum;
}

template <typename T>
constexpr DataType type_of() {
  return std::is_same_v<T, double> ? DataType::kFloat64 : DataType::kInt64;
}

// One plan's buffers: rewritten before every start, checked after.
template <typename T>
struct Buffers {
  std::vector<T> send;
  std::vector<T> recv;
  bool in_place = false;
  Buffers(std::size_t count, bool in_place_) : send(count), recv(count), in_place(in_place_) {}
  const void* send_pointer() const { return in_place ? recv.data() : send.data(); }
  void fill(int rank, int round) {
    std::vector<T>& input = in_place ? recv : send;
    for (std::size_t i = 0; i < input.size(); ++i) input[i] = static_cast<T>(value(rank, i, round));
    if (!in_place) std::fill(recv.begin(), recv.end(), static_cast<T>(-777777));
  }
  // Every element; the first wrong one named with rank, index, values.
  void expect_sum(int ranks, int rank, int round, const std::string& what) const {
    for (std::size_t i = 0; i < recv.size(); ++i) {
      const T expected = static_cast<T>(expected_sum(ranks, i, round));
      if (recv[i] != expected) {
        ADD_FAILURE() << what << " round " << round << ": rank " << rank << " index " << i
                      << " expected " << expected << " actual " << recv[i];
        return;
      }
    }
    if (!in_place) {
      for (std::size_t i = 0; i < send.size(); ++i) {
        if (send[i] != static_cast<T>(value(rank, i, round))) {
          ADD_FAILURE() << what << " round " << round << ": rank " << rank
                        << " send written at index " << i;
          return;
        }
      }
    }
  }
};

template <typename T>
void run_rounds(std::size_t count, bool in_place) {
  Communicator& comm = world();
  Buffers<T> buffers(count, in_place);
  Plan plan =
      comm.all_reduce_init(buffers.send_pointer(), buffers.recv.data(), count, type_of<T>());
  const std::string what = "all_reduce plan count " + std::to_string(count) + " " +
                           std::string(collective::to_string(type_of<T>())) +
                           (in_place ? " in place" : " out of place");
  for (int round = 0; round < 12; ++round) {
    buffers.fill(comm.rank(), round);
    Work work = plan.start();
    work.wait();
    EXPECT_TRUE(work.is_completed());
    buffers.expect_sum(comm.size(), comm.rank(), round, what);
  }
}

TEST(Plan, ManyRoundsExactWithTheBuffersRewrittenBetweenStarts) {
  for (const std::size_t count : {std::size_t{0}, std::size_t{7}, std::size_t{70001}}) {
    for (const bool in_place : {false, true}) {
      run_rounds<std::int64_t>(count, in_place);
      run_rounds<double>(count, in_place);
    }
  }
}

// Plans, blocking and `_async` calls interleaved in one program order; a
// start queued behind an `_async` call still in flight, and an `_async`
// call queued behind a start.
TEST(Plan, MixedWithBlockingAndAsyncCallsAndStartedWhileAnotherIsInFlight) {
  Communicator& comm = world();
  const std::size_t count = 70001;
  Buffers<std::int64_t> a(count, false);
  Buffers<double> b(7, true);
  Buffers<std::int64_t> blocking(count, false);
  Buffers<std::int64_t> async(count, true);
  Plan plan_a = comm.all_reduce_init(a.send_pointer(), a.recv.data(), count, DataType::kInt64);
  Plan plan_b = comm.all_reduce_init(b.send_pointer(), b.recv.data(), 7, DataType::kFloat64);
  for (int round = 0; round < 6; ++round) {
    a.fill(comm.rank(), round);
    b.fill(comm.rank(), round + 100);
    blocking.fill(comm.rank(), round + 200);
    async.fill(comm.rank(), round + 300);
    Work first =
        comm.all_reduce_async(async.send_pointer(), async.recv.data(), count, DataType::kInt64);
    Work start_a = plan_a.start();  // queued behind the `_async` call
    Work start_b = plan_b.start();
    comm.all_reduce(blocking.send_pointer(), blocking.recv.data(), count, DataType::kInt64);
    blocking.expect_sum(comm.size(), comm.rank(), round + 200, "blocking between starts");
    EXPECT_TRUE(first.is_completed() && start_a.is_completed() && start_b.is_completed())
        << "rank " << comm.rank() << ": a blocking call returned before the calls before it";
    start_b.wait();
    start_a.wait();
    first.wait();
    a.expect_sum(comm.size(), comm.rank(), round, "plan a");
    b.expect_sum(comm.size(), comm.rank(), round + 100, "plan b");
    async.expect_sum(comm.size(), comm.rank(), round + 300, "_async");
  }
}

// A plan waited for at once leaves its starts to wait() and wakes no
// thread (docs/architecture.md, "Persistent plans"); a start the program
// then does not wait for still completes while the caller only computes:
// the plans' watch hands it to the progress thread. The bound is generous
// (a loaded machine): it only catches a start that never completes alone.
TEST(Plan, AStartCompletesWhileTheCallerComputesAfterStartsWaitedForAtOnce) {
  Communicator& comm = world();
  Buffers<std::int64_t> buffers(7, false);
  Plan plan =
      comm.all_reduce_init(buffers.send_pointer(), buffers.recv.data(), 7, DataType::kInt64);
  for (int round = 0; round < 20; ++round) {
    buffers.fill(comm.rank(), round);
    plan.start().wait();
    buffers.expect_sum(comm.size(), comm.rank(), round, "a start waited for at once");
  }
  for (int round = 20; round < 23; ++round) {
    buffers.fill(comm.rank(), round);
    Work work = plan.start();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    volatile double sink = 1.0;
    bool completed = false;
    while (!completed && std::chrono::steady_clock::now() < deadline) {
      for (int i = 0; i < 100000; ++i) sink = sink * 1.0000001 + 1e-9;
      completed = work.is_completed();
    }
    ASSERT_TRUE(completed) << "rank " << comm.rank() << ": start " << round
                           << " of an 8-byte all_reduce plan did not complete within 120 s "
                              "while the caller computed";
    EXPECT_TRUE(work.test());
    buffers.expect_sum(comm.size(), comm.rank(), round, "a start completed by the library");
  }
}

// Rank 0 starts, then blocks on the second communicator until every other
// rank's wait() for the same start has returned: the start must complete
// without rank 0 entering the library for it (its thread was not woken).
TEST(Plan, AStartCompletesWhileItsRankIsBlockedElsewhere) {
  Communicator& comm = world();
  if (comm.size() == 1) GTEST_SKIP() << "needs a peer waiting for the start";
  side();  // made (a collective split) before any start is held
  Buffers<std::int64_t> buffers(7, true);
  Plan plan =
      comm.all_reduce_init(buffers.send_pointer(), buffers.recv.data(), 7, DataType::kInt64);
  for (int round = 0; round < 5; ++round) {  // waited for at once: starts wake no thread
    buffers.fill(comm.rank(), round);
    plan.start().wait();
  }
  for (int round = 5; round < 8; ++round) {
    buffers.fill(comm.rank(), round);
    Work work = plan.start();
    // Rank 0 passes the barrier only after the others' wait() returned,
    // which needed its part of the start (it may still be finishing its
    // own).
    if (comm.rank() != 0) work.wait();
    side().barrier();
    work.wait();
    buffers.expect_sum(comm.size(), comm.rank(), round, "a start of a rank blocked elsewhere");
  }
}

std::string without_numbers(const std::string& text) {
  return std::regex_replace(text, std::regex("#[0-9]+"), "#N");
}

// Rank 0 starts while its peers are held back (side()): its start cannot
// finish, so a second start must be refused, with this text; then the
// peers start and the first start completes, exact.
TEST(Plan, StartWhileThePreviousStartIsUnfinishedIsRefused) {
  Communicator& comm = world();
  if (comm.size() == 1) GTEST_SKIP() << "holding a start unfinished needs a peer";
  side();  // made (a collective split) before any start is held
  Buffers<std::int64_t> buffers(7, false);
  Plan plan =
      comm.all_reduce_init(buffers.send_pointer(), buffers.recv.data(), 7, DataType::kInt64);
  buffers.fill(comm.rank(), 1);
  Work work;
  if (comm.rank() == 0) {
    work = plan.start();
    try {
      (void)plan.start();
      ADD_FAILURE() << "rank 0: a second start with the first unfinished was accepted";
    } catch (const collective::InvalidArgumentError& error) {
      EXPECT_EQ(without_numbers(error.what()),
                "all_reduce plan #N (count 7, int64, sum) start (rank 0): the plan's previous "
                "start (all_reduce #N) is still in flight: wait for its Work (or test it until "
                "complete) before starting the plan again");
    }
    side().barrier();
  } else {
    side().barrier();
    work = plan.start();
  }
  work.wait();
  buffers.expect_sum(comm.size(), comm.rank(), 1, "the first start");
  // The refused start took no turn: the next start agrees on every rank.
  buffers.fill(comm.rank(), 2);
  plan.start().wait();
  buffers.expect_sum(comm.size(), comm.rank(), 2, "the start after the refusal");
}

// A plan destroyed (its last copy) with a start in flight: the start still
// completes and writes its result; its Work stays valid.
TEST(Plan, DestroyedWithAStartInFlightStillCompletes) {
  Communicator& comm = world();
  side();  // made (a collective split) before any start is held
  Buffers<double> buffers(70001, true);
  buffers.fill(comm.rank(), 4);
  Work work;
  {
    Plan plan = comm.all_reduce_init(buffers.send_pointer(), buffers.recv.data(), 70001,
                                     DataType::kFloat64);
    if (comm.rank() == 0) {
      work = plan.start();
    } else {
      side().barrier();  // rank 0's plan is gone before this start
      work = plan.start();
    }
  }
  if (comm.rank() == 0 && comm.size() > 1) side().barrier();
  work.wait();
  buffers.expect_sum(comm.size(), comm.rank(), 4, "a start of a destroyed plan");
}

// Two plans of the same shape: one rank starts the other one, or starts
// them in the other order. Every rank's wait() raises MismatchError naming
// the plans' tags; nothing is written; the communicator stays usable.
TEST(Plan, ARankThatStartsAnotherPlanFailsOnEveryRank) {
  Communicator& comm = world();
  if (comm.size() == 1) GTEST_SKIP() << "a mismatch needs two ranks";
  Buffers<std::int64_t> a(7, false);
  Buffers<std::int64_t> b(7, false);
  Plan plan_a = comm.all_reduce_init(a.send_pointer(), a.recv.data(), 7, DataType::kInt64);
  Plan plan_b = comm.all_reduce_init(b.send_pointer(), b.recv.data(), 7, DataType::kInt64);
  a.fill(comm.rank(), 0);
  b.fill(comm.rank(), 0);
  const auto expect_mismatch = [&](Work& work, const char* what) {
    try {
      work.wait();
      ADD_FAILURE() << "rank " << comm.rank() << ": " << what << " accepted";
    } catch (const collective::MismatchError& error) {
      const std::string text = error.what();
      EXPECT_NE(text.find("all_reduce #"), std::string::npos) << text;
      EXPECT_NE(text.find("tag=0x"), std::string::npos) << "rank " << comm.rank() << ": " << text;
    }
  };
  {
    Work work = comm.rank() == 0 ? plan_a.start() : plan_b.start();
    expect_mismatch(work, "another plan's start");
  }
  {
    Work first = comm.rank() == 0 ? plan_a.start() : plan_b.start();
    expect_mismatch(first, "plans started in another order (first)");
    Work second = comm.rank() == 0 ? plan_b.start() : plan_a.start();
    expect_mismatch(second, "plans started in another order (second)");
  }
  for (std::size_t i = 0; i < 7; ++i) {
    ASSERT_EQ(a.recv[i], -777777) << "rank " << comm.rank() << " index " << i << " written";
    ASSERT_EQ(b.recv[i], -777777) << "rank " << comm.rank() << " index " << i << " written";
  }
  // A plan's start against a blocking call of the same shape.
  if (comm.rank() == 0) {
    Work work = plan_a.start();
    expect_mismatch(work, "a start against a blocking call");
  } else {
    EXPECT_THROW(comm.all_reduce(b.send_pointer(), b.recv.data(), 7, DataType::kInt64),
                 collective::MismatchError);
  }
  a.fill(comm.rank(), 5);
  plan_a.start().wait();
  a.expect_sum(comm.size(), comm.rank(), 5, "after the mismatches");
}

// Ranks disagree at creation: MismatchError on every rank, from the
// creation itself; nothing written; the next call agrees.
TEST(Plan, MismatchAtCreationIsRaisedOnEveryRank) {
  Communicator& comm = world();
  if (comm.size() == 1) GTEST_SKIP() << "a mismatch needs two ranks";
  Buffers<std::int64_t> buffers(8, false);
  buffers.fill(comm.rank(), 0);
  const std::size_t count = comm.rank() == 0 ? 7 : 8;
  try {
    (void)comm.all_reduce_init(buffers.send_pointer(), buffers.recv.data(), count,
                               DataType::kInt64);
    ADD_FAILURE() << "rank " << comm.rank() << ": plans of different counts accepted";
  } catch (const collective::MismatchError& error) {
    EXPECT_NE(std::string(error.what()).find("count=7"), std::string::npos) << error.what();
  }
  for (std::size_t i = 0; i < 8; ++i) {
    ASSERT_EQ(buffers.recv[i], -777777) << "rank " << comm.rank() << " index " << i;
  }
  Plan plan =
      comm.all_reduce_init(buffers.send_pointer(), buffers.recv.data(), 8, DataType::kInt64);
  plan.start().wait();
  buffers.expect_sum(comm.size(), comm.rank(), 0, "after a mismatched creation");
}

TEST(Plan, AnEmptyPlanRefusesToStart) {
  Plan plan;
  try {
    (void)plan.start();
    ADD_FAILURE() << "an empty plan started";
  } catch (const collective::InvalidArgumentError& error) {
    EXPECT_EQ(std::string(error.what()),
              "Plan::start (rank -1): an empty plan (default-constructed or moved from): make one "
              "with Communicator::all_reduce_init");
  }
}

}  // namespace
