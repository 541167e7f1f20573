// Ranks that disagree about a call all fail, at once, with one message that
// names the call's sequence number and each rank's values; a rank that
// rejects its own arguments makes every other rank fail at once, naming
// it. Afterwards the communicator works normally (every test ends with a
// good call, which would itself fail if the ranks had drifted apart).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "api/communicator_access.h"
#include "transport/mpi/peer_exchange.h"
#include "collective/collective.h"
#include "expect_error.h"

namespace collective {
namespace {

using testing::expect_raises;

// A mismatch needs two ranks (at one rank these tests have nothing to do).
#define REQUIRE_RANKS(minimum) \
  if (size < (minimum)) GTEST_SKIP() << "needs " << (minimum) << " ranks"

// The check travels two ways (cross_rank_check/cross_rank_check.h): over MPI
// messages, and, once a single-node communicator has its shared-memory
// segment, through the segment's boxes, where a small all_reduce carries
// its input beside the fingerprint. Every test runs both ways, each on a
// communicator of its own.
enum class CheckPath { kMpiMessages, kNodeBoard };

class CrossRankCheckTest : public ::testing::TestWithParam<CheckPath> {
 protected:
  void SetUp() override {
    rank = comm.rank();
    size = comm.size();
    last = size - 1;
    send.assign(64 * static_cast<std::size_t>(size), 1.0f);
    recv.assign(64 * static_cast<std::size_t>(size), -7.0f);
    if (GetParam() == CheckPath::kNodeBoard) {
      if (comm.topology().node_count() != 1) GTEST_SKIP() << "the ranks span nodes: no node board";
      // A shared-memory call sets up the segment the check then uses.
      AllReduceOptions options;
      options.algorithm = Algorithm::kSharedMemory;
      std::vector<float> warm(4, 1.0f);
      comm.all_reduce(warm.data(), warm.data(), warm.size(), DataType::kFloat32, options);
    }
  }

  // The ranks still agree and the communicator still works.
  void expect_healthy() {
    std::vector<float> values(33, static_cast<float>(rank + 1));
    comm.all_reduce(std::span<float>(values));
    for (float v : values)
      ASSERT_EQ(v, static_cast<float>(size * (size + 1) / 2)) << "rank " << rank;
  }

  std::string label(const char* kind) const {
    return std::string(kind) + " #" + std::to_string(comm.sequence_number());
  }

  Communicator comm = Communicator::world().split(0, Communicator::world().rank());
  int rank = 0;
  int size = 1;
  int last = 0;
  std::vector<float> send;
  std::vector<float> recv;
};

TEST_P(CrossRankCheckTest, CountMismatchNamesEveryRanksCount) {
  REQUIRE_RANKS(2);
  const std::size_t count = rank == 0 ? 4 : 8;
  const std::string operation = label("all_reduce");
  expect_raises<MismatchError>(
      [&] { comm.all_reduce(send.data(), recv.data(), count, DataType::kFloat32); },
      {operation, "rank 0 count=4",
       (size == 2 ? "rank 1 count=8" : "ranks 1-" + std::to_string(last) + " count=8")},
      rank);
  for (float v : recv) ASSERT_EQ(v, -7.0f) << "a mismatched call touched the output";
  expect_healthy();
}

TEST_P(CrossRankCheckTest, TypeMismatch) {
  REQUIRE_RANKS(2);
  std::vector<double> wide(16, 1.0);
  const std::string operation = label("all_reduce");
  expect_raises<MismatchError>(
      [&] {
        if (rank == last) comm.all_reduce(wide.data(), wide.data(), 4, DataType::kFloat64);
        else comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32);
      },
      {operation, "type=float32", "rank " + std::to_string(last) + " type=float64"}, rank);
  expect_healthy();
}

TEST_P(CrossRankCheckTest, OpMismatch) {
  REQUIRE_RANKS(2);
  AllReduceOptions options;
  options.op = rank == 0 ? ReduceOp::kSum : ReduceOp::kMax;
  const std::string operation = label("all_reduce");
  expect_raises<MismatchError>(
      [&] { comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32, options); },
      {operation, "rank 0 op=sum", "op=max"}, rank);
  expect_healthy();
}

// The caller's tag (CommonOptions::call_tag) is compared like the call's
// own fields: two calls that look alike but are tagged differently (step 3
// against step 2) are refused on every rank, whatever the check's path,
// and the output is untouched.
TEST_P(CrossRankCheckTest, CallTagMismatch) {
  REQUIRE_RANKS(2);
  AllReduceOptions options;
  options.call_tag = rank == last ? 0x3000000000000002ull : 0x2000000000000001ull;
  const std::string operation = label("all_reduce");
  expect_raises<MismatchError>(
      [&] { comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32, options); },
      {operation, "tag=0x2000000000000001",
       "rank " + std::to_string(last) + " tag=0x3000000000000002"},
      rank);
  for (float v : recv)
    ASSERT_EQ(v, -7.0f) << "rank " << rank << ": a mismatched call touched the output";
  // An untagged call does not pair with a tagged one.
  AllReduceOptions untagged;
  if (rank == 0) untagged.call_tag = 5;
  expect_raises<MismatchError>(
      [&] { comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32, untagged); },
      {"rank 0 tag=0x0000000000000005", "tag=none"}, rank);
  // Equal tags agree.
  AllReduceOptions same;
  same.call_tag = 42;
  std::vector<float> values(4, static_cast<float>(rank + 1));
  comm.all_reduce(values.data(), values.data(), values.size(), DataType::kFloat32, same);
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(values[i], static_cast<float>(size * (size + 1) / 2))
        << "rank " << rank << " index " << i;
  }
  expect_healthy();
}

TEST_P(CrossRankCheckTest, RootMismatch) {
  REQUIRE_RANKS(2);
  BroadcastOptions options;
  options.root = rank == last ? 1 : 0;
  const std::string operation = label("broadcast");
  expect_raises<MismatchError>([&] { comm.broadcast(recv.data(), 4, DataType::kFloat32, options); },
                               {operation, "root=0", "rank " + std::to_string(last) + " root=1"},
                               rank);
  ReduceOptions reduce_options;
  reduce_options.root = rank == 0 ? last : 0;
  expect_raises<MismatchError>(
      [&] { comm.reduce(send.data(), recv.data(), 4, DataType::kFloat32, reduce_options); },
      {label("reduce"), "rank 0 root=" + std::to_string(last)}, rank);
  expect_healthy();
}

TEST_P(CrossRankCheckTest, DifferentCollectives) {
  REQUIRE_RANKS(2);
  const std::string sequence = "#" + std::to_string(comm.sequence_number());
  expect_raises<MismatchError>(
      [&] {
        if (rank == 0) comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32);
        else comm.broadcast(recv.data(), 4, DataType::kFloat32);
      },
      {sequence, "rank 0 all_reduce count=4 type=float32 op=sum",
       "broadcast count=4 type=float32 root=0"},
      rank);
  expect_raises<MismatchError>(
      [&] {
        if (rank == last) comm.barrier();
        else comm.all_gather(send.data(), recv.data(), 4, DataType::kFloat32);
      },
      {"all_gather count=4", "rank " + std::to_string(last) + " barrier"}, rank);
  expect_healthy();
}

TEST_P(CrossRankCheckTest, TwoCollectivesInDifferentOrder) {
  REQUIRE_RANKS(2);
  // Even ranks: all_reduce then broadcast; odd ranks the other way round.
  // Both calls fail on every rank, and nothing is left in flight.
  const bool even = rank % 2 == 0;
  for (int call = 0; call < 2; ++call) {
    const bool reduce_now = (call == 0) == even;
    expect_raises<MismatchError>(
        [&] {
          if (reduce_now) comm.all_reduce(send.data(), recv.data(), 8, DataType::kFloat32);
          else comm.broadcast(recv.data(), 8, DataType::kFloat32);
        },
        {"the ranks disagree", "all_reduce", "broadcast"}, rank);
  }
  expect_healthy();
}

TEST_P(CrossRankCheckTest, SkippedCallIsCaughtAtTheNextCall) {
  REQUIRE_RANKS(2);
  // Every rank but the last broadcasts and then all-reduces; the last rank
  // skips the broadcast, so its all_reduce meets the others' broadcast.
  comm.all_reduce(send.data(), recv.data(), 8, DataType::kFloat32);
  const std::string sequence = "#" + std::to_string(comm.sequence_number());
  expect_raises<MismatchError>(
      [&] {
        if (rank != last) comm.broadcast(recv.data(), 8, DataType::kFloat32);
        comm.all_reduce(send.data(), recv.data(), 8, DataType::kFloat32);
      },
      {sequence, "broadcast", "rank " + std::to_string(last) + " all_reduce"}, rank);
  expect_healthy();
}

TEST_P(CrossRankCheckTest, SkippedIdenticalCallTimesOutNamingTheRank) {
  REQUIRE_RANKS(2);
  // A skipped call that looks exactly like the next one cannot be told
  // apart by its arguments: the ranks that made it wait at the next call
  // for the rank that is done, and the timeout names that rank.
  Communicator scratch = comm.split(0, rank);
  // Only the call that must time out gets the short timeout: the good call
  // before it keeps the test's (COLLECTIVE_TIMEOUT), so that a rank late to
  // it on a loaded machine is waited for instead of failing the test.
  AllReduceOptions options;
  options.timeout = std::chrono::milliseconds(1500);
  const int calls = rank == last ? 1 : 2;
  std::vector<float> values(8, 1.0f);
  if (rank == last) {
    scratch.all_reduce(values.data(), values.data(), 8, DataType::kFloat32);
  } else {
    scratch.all_reduce(values.data(), values.data(), 8, DataType::kFloat32);
    const auto raised = expect_raises<TimeoutError>(
        [&] { scratch.all_reduce(values.data(), values.data(), 8, DataType::kFloat32, options); },
        {"all_reduce #1", "rank " + std::to_string(last), "cross-rank check"}, rank);
    EXPECT_LT(raised.seconds, 10.0);
  }
  (void)calls;
  MPI_Barrier(MPI_COMM_WORLD);
  expect_healthy();
}

TEST_P(CrossRankCheckTest, MismatchAfterFiveHundredGoodCalls) {
  REQUIRE_RANKS(2);
  std::vector<std::int32_t> values(5);
  for (int call = 0; call < 500; ++call) {
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = rank + call + static_cast<int>(i);
    comm.all_reduce(std::span<std::int32_t>(values));
    for (std::size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(values[i], size * (call + static_cast<int>(i)) + size * (size - 1) / 2)
          << "rank " << rank << " call " << call << " index " << i;
    }
  }
  const std::string operation = label("all_reduce");
  expect_raises<MismatchError>(
      [&] {
        comm.all_reduce(values.data(), values.data(), rank == last ? 4 : 5, DataType::kInt32);
      },
      {operation, "count=5", "rank " + std::to_string(last) + " count=4"}, rank);
  expect_healthy();
}

// A repeated call's fingerprint is the one its first call made, renumbered
// (the repeat-call memo, api/dispatch.cc); a rank whose same call is new to
// its memo (another buffer: the fingerprint does not name buffers) makes
// its fingerprint afresh. Both must describe the same call, this one.
TEST_P(CrossRankCheckTest, RepeatedAndFreshFingerprintsAgree) {
  REQUIRE_RANKS(2);
  // The last rank alternates between two buffers, the others keep one.
  const auto alternates = [&](int call) { return rank == last && call % 2 == 1; };
  std::vector<float> first(5), second(5);
  for (int call = 0; call < 6; ++call) {
    std::vector<float>& values = alternates(call) ? second : first;
    std::fill(values.begin(), values.end(), static_cast<float>(rank + call));
    comm.all_reduce(std::span<float>(values));
    for (std::size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(values[i], static_cast<float>(size * call + size * (size - 1) / 2))
          << "rank " << rank << " call " << call << " index " << i;
    }
  }
  std::vector<std::size_t> counts(static_cast<std::size_t>(size), 3);
  std::vector<std::size_t> displacements(counts.size());
  for (std::size_t q = 0; q < displacements.size(); ++q) displacements[q] = 3 * q;
  std::vector<float> gathered_first(3 * counts.size()), gathered_second(3 * counts.size());
  const std::vector<float> mine(3, static_cast<float>(rank + 1));
  for (int call = 0; call < 6; ++call) {
    std::vector<float>& gathered = alternates(call) ? gathered_second : gathered_first;
    std::fill(gathered.begin(), gathered.end(), -1.0f);
    comm.all_gather_v(mine.data(), 3, gathered.data(), counts, displacements, DataType::kFloat32);
    for (std::size_t i = 0; i < gathered.size(); ++i) {
      ASSERT_EQ(gathered[i], static_cast<float>(i / 3 + 1))
          << "rank " << rank << " call " << call << " index " << i;
    }
  }
  expect_healthy();
}

TEST_P(CrossRankCheckTest, AlgorithmMismatch) {
  REQUIRE_RANKS(2);
  AllReduceOptions options;
  options.algorithm = rank == 0 ? Algorithm::kRing : Algorithm::kMpi;
  expect_raises<MismatchError>(
      [&] { comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32, options); },
      {"rank 0 algorithm=ring", "algorithm=mpi"}, rank);
  expect_healthy();
}

TEST_P(CrossRankCheckTest, BlockCountMismatchInReduceScatterAndAllGather) {
  REQUIRE_RANKS(2);
  expect_raises<MismatchError>(
      [&] { comm.reduce_scatter(send.data(), recv.data(), rank == 0 ? 3 : 2, DataType::kFloat32); },
      {"reduce_scatter", "rank 0 count=3", "count=2"}, rank);
  expect_raises<MismatchError>(
      [&] { comm.all_gather(send.data(), recv.data(), rank == last ? 1 : 2, DataType::kFloat32); },
      {"all_gather", "count=2", "rank " + std::to_string(last) + " count=1"}, rank);
  expect_healthy();
}

TEST_P(CrossRankCheckTest, ManyDistinctCallsAreGrouped) {
  REQUIRE_RANKS(3);
  // Every rank a different count: each appears once, in rank order.
  std::vector<std::string> needles;
  for (int r = 0; r < size; ++r) {
    needles.push_back("rank " + std::to_string(r) + " count=" + std::to_string(r + 1));
  }
  const auto raised = expect_raises<MismatchError>(
      [&] {
        comm.all_reduce(send.data(), recv.data(), static_cast<std::size_t>(rank + 1),
                        DataType::kFloat32);
      },
      {"the ranks disagree"}, rank);
  for (const std::string& needle : needles) {
    EXPECT_NE(raised.message.find(needle), std::string::npos) << raised.message;
  }
  expect_healthy();
}

// Bad input on one rank only: that rank raises its own InvalidArgumentError
// and every other rank an error naming it and the cause, at once.
class OneRankBadInputTest : public CrossRankCheckTest {
 protected:
  template <typename Error, typename Bad, typename Good>
  void expect_one_rank_rejected(Bad bad, Good good, const std::string& cause) {
    const std::string operation = "#" + std::to_string(comm.sequence_number());
    const std::string culprit = "rank " + std::to_string(last);
    if (rank == last) {
      expect_raises<Error>(bad, {operation, cause}, rank);
    } else {
      const auto raised =
          expect_raises<Error>(good, {operation, culprit + " rejected its arguments", cause}, rank);
      EXPECT_EQ(raised.message.find("timed out"), std::string::npos) << raised.message;
    }
    for (float v : recv) ASSERT_EQ(v, -7.0f) << "rank " << rank << ": the output was touched";
    ++tried;
  }
  void TearDown() override {
    if (!HasFatalFailure() && size > 1) expect_healthy();
  }
  int tried = 0;
};

TEST_P(OneRankBadInputTest, EveryKindOfBadInput) {
  REQUIRE_RANKS(2);
  auto good_reduce = [&] { comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32); };
  expect_one_rank_rejected<InvalidArgumentError>(
      [&] { comm.all_reduce(nullptr, recv.data(), 4, DataType::kFloat32); }, good_reduce,
      "send buffer is null");
  expect_one_rank_rejected<InvalidArgumentError>(
      [&] { comm.all_reduce(send.data(), nullptr, 4, DataType::kFloat32); }, good_reduce,
      "recv buffer is null");
  expect_one_rank_rejected<InvalidArgumentError>(
      [&] { comm.all_reduce(send.data(), send.data() + 1, 4, DataType::kFloat32); }, good_reduce,
      "overlap");
  expect_one_rank_rejected<InvalidArgumentError>(
      [&] { comm.all_reduce(send.data(), recv.data(), 4, static_cast<DataType>(42)); }, good_reduce,
      "unknown data type (DataType value 42)");
  AllReduceOptions bad_op;
  bad_op.op = static_cast<ReduceOp>(17);
  expect_one_rank_rejected<InvalidArgumentError>(
      [&] { comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32, bad_op); },
      good_reduce, "unknown reduce op (ReduceOp value 17)");
  expect_one_rank_rejected<InvalidArgumentError>(
      [&] {
        comm.all_reduce(send.data(), recv.data(), std::numeric_limits<std::size_t>::max() / 2,
                        DataType::kFloat32);
      },
      good_reduce, "overflows the byte size");
  AllReduceOptions negative_timeout;
  negative_timeout.timeout = std::chrono::milliseconds(-1);
  expect_one_rank_rejected<InvalidArgumentError>(
      [&] { comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32, negative_timeout); },
      good_reduce, "negative timeout");
  BroadcastOptions bad_root;
  bad_root.root = size + 3;
  expect_one_rank_rejected<InvalidArgumentError>(
      [&] { comm.broadcast(recv.data(), 4, DataType::kFloat32, bad_root); },
      [&] { comm.broadcast(recv.data(), 4, DataType::kFloat32); },
      "root " + std::to_string(size + 3) + " is outside");
  expect_one_rank_rejected<InvalidArgumentError>(
      [&] { comm.broadcast(nullptr, 4, DataType::kFloat32); },
      [&] { comm.broadcast(recv.data(), 4, DataType::kFloat32); }, "buffer is null");
  expect_one_rank_rejected<InvalidArgumentError>(
      [&] { comm.reduce_scatter(send.data(), send.data() + 3, 4, DataType::kFloat32); },
      [&] { comm.reduce_scatter(send.data(), recv.data(), 4, DataType::kFloat32); },
      "recv == send + rank * recv_count");
  expect_one_rank_rejected<InvalidArgumentError>(
      [&] { comm.all_gather(recv.data() + 1, recv.data(), 4, DataType::kFloat32); },
      [&] { comm.all_gather(send.data(), recv.data(), 4, DataType::kFloat32); },
      "send == recv + rank * send_count");
  // Host buffers declared as device memory (with or without a GPU, and
  // whether NCCL is built in or not): refused, naming the declaration.
  AllReduceOptions device;
  device.memory = MemoryKind::kDevice;
  device.algorithm = Algorithm::kRing;
  AllReduceOptions host;
  host.algorithm = Algorithm::kRing;
  expect_one_rank_rejected<Error>(
      [&] { comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32, device); },
      [&] { comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32, host); }, "evice");
  // An algorithm that cannot serve the call, forced on one rank.
  BarrierOptions ring_barrier;
  ring_barrier.algorithm = Algorithm::kRing;
  expect_one_rank_rejected<UnsupportedError>([&] { comm.barrier(ring_barrier); },
                                             [&] { comm.barrier(); },
                                             "ring does not implement barrier");
  if (rank == 0) std::printf("[ one-rank bad inputs tried: %d ]\n", tried);
}

TEST_P(OneRankBadInputTest, UseAfterFreeOnOneRankTimesOutNamingIt) {
  REQUIRE_RANKS(2);
  // A freed communicator has no MPI communicator left to tell the others
  // with: they wait for that rank, and the timeout names it.
  Communicator doomed = comm.split(0, rank);
  AllReduceOptions options;
  options.timeout = std::chrono::milliseconds(1500);
  std::vector<float> values(4, 1.0f);
  if (rank == last) {
    doomed.free();
    expect_raises<InvalidArgumentError>(
        [&] { doomed.all_reduce(values.data(), values.data(), 4, DataType::kFloat32, options); },
        {"all_reduce #0", "freed"}, rank);
  } else {
    expect_raises<TimeoutError>(
        [&] { doomed.all_reduce(values.data(), values.data(), 4, DataType::kFloat32, options); },
        {"all_reduce #0", "rank " + std::to_string(last)}, rank);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_P(CrossRankCheckTest, BadInputOnEveryRankRaisesLocallyOnEach) {
  // Every rank rejects: each raises its own error (the check still runs,
  // so every rank also learns the others refused too).
  expect_raises<InvalidArgumentError>(
      [&] { comm.all_reduce(nullptr, recv.data(), 4, DataType::kFloat32); },
      {label("all_reduce"), "send buffer is null", "rank " + std::to_string(rank)}, rank);
  expect_raises<InvalidArgumentError>(
      [&] { comm.all_reduce(send.data(), recv.data(), 4, static_cast<DataType>(-1)); },
      {"unknown data type"}, rank);
  expect_healthy();
}

TEST_P(CrossRankCheckTest, SmallAndLargeCountsDisagree) {
  REQUIRE_RANKS(2);
  // Rank 0's input fits the box and rides with its fingerprint; the
  // others' does not: all must still meet in the check and fail alike.
  const std::size_t count = rank == 0 ? 4 : 100000;
  std::vector<float> large_send(count, 1.0f);
  std::vector<float> large_recv(count, -7.0f);
  expect_raises<MismatchError>(
      [&] { comm.all_reduce(large_send.data(), large_recv.data(), count, DataType::kFloat32); },
      {label("all_reduce"), "rank 0 count=4", "count=100000"}, rank);
  for (float v : large_recv) ASSERT_EQ(v, -7.0f) << "rank " << rank << ": the output was touched";
  expect_healthy();
}

// A small recursive_doubling all_reduce whose check goes over MPI carries
// its input in the check's messages (one round in all), a larger one the
// head of its first message: the result must be exact, and a rank that carries must still meet one
// that does not in the check, and every rank must raise.
AllReduceOptions recursive_doubling() {
  AllReduceOptions options;
  options.algorithm = Algorithm::kRecursiveDoubling;
  return options;
}

TEST_P(CrossRankCheckTest, RecursiveDoublingCarryingTheCheckIsExact) {
  // Whole inputs ride with the fingerprints up to 32 KiB over the p-1
  // copies; larger calls carry the head (16 KiB) of their first message.
  for (const std::size_t count :
       {std::size_t{0}, std::size_t{1}, std::size_t{1023}, std::size_t{1024}, std::size_t{5000},
        std::size_t{20000}, std::size_t{100003}}) {
    std::vector<float> in(count), out(count, -7.0f);
    for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<float>((rank + 1) * (i % 7 + 1));
    comm.all_reduce(in.data(), out.data(), count, DataType::kFloat32, recursive_doubling());
    for (std::size_t i = 0; i < count; ++i) {
      const float expected = static_cast<float>(size * (size + 1) / 2 * (i % 7 + 1));
      ASSERT_EQ(out[i], expected) << "rank " << rank << " index " << i << " count " << count;
    }
    AllReduceOptions mean = recursive_doubling();
    mean.op = ReduceOp::kMean;
    comm.all_reduce(in.data(), in.data(), count, DataType::kFloat32, mean);
    for (std::size_t i = 0; i < count; ++i) {
      const float expected = static_cast<float>((size + 1) * (i % 7 + 1)) / 2.0f;
      ASSERT_EQ(in[i], expected) << "rank " << rank << " index " << i << " count " << count
                                 << " (mean, in place)";
    }
  }
  EXPECT_EQ(comm.last_algorithm(), Algorithm::kRecursiveDoubling);
}

TEST_P(CrossRankCheckTest, RecursiveDoublingCarriedAndPlainChecksMeet) {
  REQUIRE_RANKS(2);
  // 16 B rides with rank 0's fingerprint; the others' 400 KB does not.
  const std::size_t count = rank == 0 ? 4 : 100000;
  std::vector<float> in(count, 1.0f), out(count, -7.0f);
  expect_raises<MismatchError>(
      [&] {
        comm.all_reduce(in.data(), out.data(), count, DataType::kFloat32, recursive_doubling());
      },
      {label("all_reduce"), "rank 0 count=4", "count=100000"}, rank);
  for (float v : out) ASSERT_EQ(v, -7.0f) << "rank " << rank << ": the output was touched";
  // Both carry, but the ops differ.
  AllReduceOptions options = recursive_doubling();
  options.op = rank == last ? ReduceOp::kMax : ReduceOp::kSum;
  std::vector<float> small(8, 1.0f), small_out(8, -7.0f);
  expect_raises<MismatchError>(
      [&] {
        comm.all_reduce(small.data(), small_out.data(), small.size(), DataType::kFloat32, options);
      },
      {label("all_reduce"), "op="}, rank);
  for (float v : small_out) ASSERT_EQ(v, -7.0f) << "rank " << rank << ": the output was touched";
  expect_healthy();
}

// At two ranks a whole input of up to 64 KiB rides with the fingerprints:
// the first 32 KiB in the fingerprint's message, the rest in a follow-up
// sent at once, before the verdict (cross_rank_check/direct_check_exchange.h).
// Counts cover one message exactly, a follow-up of one element, half and
// whole follow-ups, and the first count past it (the head form), for
// every element width.
template <typename T>
void expect_follow_up_exact(Communicator& comm, int rank, int size) {
  const std::size_t limit = 64 * 1024 / sizeof(T);
  for (const std::size_t count :
       {limit / 2, limit / 2 + 1, limit * 3 / 4, limit - 1, limit, limit + 1}) {
    std::vector<T> in(count), out(count, T(99));
    for (std::size_t i = 0; i < count; ++i) in[i] = static_cast<T>((rank + 1) * (i % 5 + 1));
    comm.all_reduce(in.data(), out.data(), count, DataTypeOf<T>::value, recursive_doubling());
    for (std::size_t i = 0; i < count; ++i) {
      const T expected = static_cast<T>(size * (size + 1) / 2 * (i % 5 + 1));
      ASSERT_EQ(out[i], expected) << "rank " << rank << " index " << i << " count " << count;
    }
    AllReduceOptions max = recursive_doubling();
    max.op = ReduceOp::kMax;
    comm.all_reduce(in.data(), in.data(), count, DataTypeOf<T>::value, max);
    for (std::size_t i = 0; i < count; ++i) {
      const T expected = static_cast<T>(size * (i % 5 + 1));
      ASSERT_EQ(in[i], expected) << "rank " << rank << " index " << i << " count " << count
                                 << " (max, in place)";
    }
  }
}

TEST_P(CrossRankCheckTest, RecursiveDoublingFollowUpIsExact) {
  expect_follow_up_exact<float>(comm, rank, size);
  expect_follow_up_exact<std::int64_t>(comm, rank, size);
  expect_follow_up_exact<std::uint8_t>(comm, rank, size);
  EXPECT_EQ(comm.last_algorithm(), Algorithm::kRecursiveDoubling);
}

// Every message a rank sent in a call that failed its check was received
// within that call: none is left for a later call with the same tag to
// match. (A follow-up its receiver did not expect is drained by what the
// sender's header says; an expected one that never came is cancelled.)
// Only the failed call's tag is probed: a faster rank's later calls may
// already be sending.
void expect_no_message_left(Communicator& comm, int rank, std::uint64_t call) {
  comm.barrier();
  const MPI_Comm mpi = internal::CommunicatorAccess::state(comm).comm;
  const int tag = internal::PeerExchange::tag_for(call);
  for (int look = 0; look < 20; ++look) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, tag, mpi, &flag, &status);
    ASSERT_EQ(flag, 0) << "rank " << rank << ": a message from rank " << status.MPI_SOURCE
                       << " with tag " << status.MPI_TAG << " was left unreceived";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST_P(CrossRankCheckTest, RecursiveDoublingFollowUpsMeetOtherCalls) {
  REQUIRE_RANKS(2);
  const std::size_t whole = 16384;  // 64 KiB of float32: 32 KiB follows the fingerprint
  auto untouched = [&](const std::vector<float>& out, const char* what) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(out[i], -7.0f) << "rank " << rank << " index " << i << ": the output was touched ("
                               << what << ")";
    }
  };
  // Rank 0 sends a follow-up; the others' inputs fit one message.
  {
    const std::uint64_t call = comm.sequence_number();
    const std::size_t count = rank == 0 ? whole : whole / 2;
    std::vector<float> in(count, 1.0f), out(count, -7.0f);
    expect_raises<MismatchError>(
        [&] {
          comm.all_reduce(in.data(), out.data(), count, DataType::kFloat32, recursive_doubling());
        },
        {label("all_reduce"), "rank 0 count=16384", "count=8192"}, rank);
    untouched(out, "follow-up against one message");
    expect_no_message_left(comm, rank, call);
  }
  // Every rank sends a follow-up, of different sizes.
  {
    const std::uint64_t call = comm.sequence_number();
    const std::size_t count = rank == 0 ? whole : 12000;
    std::vector<float> in(count, 1.0f), out(count, -7.0f);
    expect_raises<MismatchError>(
        [&] {
          comm.all_reduce(in.data(), out.data(), count, DataType::kFloat32, recursive_doubling());
        },
        {label("all_reduce"), "rank 0 count=16384", "count=12000"}, rank);
    untouched(out, "follow-ups of different sizes");
    expect_no_message_left(comm, rank, call);
  }
  // Rank 0 sends a follow-up; the others run the ring (a carried head) or
  // the mpi algorithm (a plain check), or ask for a deterministic result.
  for (const char* other : {"ring", "mpi", "deterministic"}) {
    const std::uint64_t call = comm.sequence_number();
    AllReduceOptions options = recursive_doubling();
    if (rank != 0) {
      if (std::string(other) == "ring") options.algorithm = Algorithm::kRing;
      if (std::string(other) == "mpi") options.algorithm = Algorithm::kMpi;
      if (std::string(other) == "deterministic") options.deterministic = true;
    }
    std::vector<float> in(whole, 1.0f), out(whole, -7.0f);
    const bool deterministic = std::string(other) == "deterministic";
    expect_raises<MismatchError>(
        [&] { comm.all_reduce(in.data(), out.data(), whole, DataType::kFloat32, options); },
        {label("all_reduce"),
         deterministic ? "rank 0 deterministic=false" : "rank 0 algorithm=recursive_doubling",
         deterministic ? std::string("deterministic=true") : std::string("algorithm=") + other},
        rank);
    untouched(out, other);
    expect_no_message_left(comm, rank, call);
  }
  // The last rank rejects its arguments while rank 0 sends a follow-up.
  {
    const std::uint64_t call = comm.sequence_number();
    std::vector<float> in(whole, 1.0f), out(whole, -7.0f);
    if (rank == last) {
      expect_raises<InvalidArgumentError>(
          [&] {
            comm.all_reduce(nullptr, out.data(), whole, DataType::kFloat32, recursive_doubling());
          },
          {label("all_reduce"), "send buffer is null"}, rank);
    } else {
      expect_raises<InvalidArgumentError>(
          [&] {
            comm.all_reduce(in.data(), out.data(), whole, DataType::kFloat32, recursive_doubling());
          },
          {label("all_reduce"), "rank " + std::to_string(last) + " rejected its arguments",
           "send buffer is null"},
          rank);
    }
    untouched(out, "a rejecting rank");
    expect_no_message_left(comm, rank, call);
  }
  // And the same size still reduces exactly afterwards.
  std::vector<float> in(whole, static_cast<float>(rank + 1)), out(whole, -7.0f);
  comm.all_reduce(in.data(), out.data(), whole, DataType::kFloat32, recursive_doubling());
  for (std::size_t i = 0; i < whole; ++i) {
    ASSERT_EQ(out[i], static_cast<float>(size * (size + 1) / 2))
        << "rank " << rank << " index " << i;
  }
  expect_healthy();
}

// A ring reduce-scatter, all_reduce or reduce whose check goes over MPI
// carries it in its first message: the head of step 0's first segment
// (up to 16 KiB) rides with the fingerprint, the rest follows the verdict.
// Counts cover no data, chunks shorter than the head, a head that is the
// whole first segment, and a first segment longer than the head.
template <typename Options>
Options ring() {
  Options options;
  options.algorithm = Algorithm::kRing;
  return options;
}

float ring_input(int rank, std::size_t i) { return static_cast<float>((rank + 1) * (i % 5 + 1)); }
float ring_sum(int size, std::size_t i) {
  return static_cast<float>(size * (size + 1) / 2 * (i % 5 + 1));
}

TEST_P(CrossRankCheckTest, RingCarryingTheCheckIsExact) {
  for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{4099},
                                  std::size_t{8192}, std::size_t{300001}}) {
    std::vector<float> in(count), out(count, -7.0f);
    for (std::size_t i = 0; i < count; ++i) in[i] = ring_input(rank, i);
    comm.all_reduce(in.data(), out.data(), count, DataType::kFloat32, ring<AllReduceOptions>());
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(out[i], ring_sum(size, i))
          << "rank " << rank << " index " << i << " count " << count;
    }
    EXPECT_EQ(comm.last_algorithm(), Algorithm::kRing);
    AllReduceOptions mean = ring<AllReduceOptions>();
    mean.op = ReduceOp::kMean;
    comm.all_reduce(in.data(), in.data(), count, DataType::kFloat32, mean);
    for (std::size_t i = 0; i < count; ++i) {
      const float expected = static_cast<float>((size + 1) * (i % 5 + 1)) / 2.0f;
      ASSERT_EQ(in[i], expected) << "rank " << rank << " index " << i << " count " << count
                                 << " (mean, in place)";
    }

    // reduce_scatter: `count` elements per rank.
    std::vector<float> blocks(count * static_cast<std::size_t>(size)), mine(count, -7.0f);
    for (std::size_t i = 0; i < blocks.size(); ++i) blocks[i] = ring_input(rank, i);
    comm.reduce_scatter(blocks.data(), mine.data(), count, DataType::kFloat32,
                        ring<ReduceScatterOptions>());
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t at = static_cast<std::size_t>(rank) * count + i;
      ASSERT_EQ(mine[i], ring_sum(size, at))
          << "rank " << rank << " index " << i << " count " << count << " (reduce_scatter)";
    }

    // reduce to the last rank.
    ReduceOptions to_last = ring<ReduceOptions>();
    to_last.root = last;
    std::vector<float> reduced(count, -7.0f);
    for (std::size_t i = 0; i < count; ++i) in[i] = ring_input(rank, i);
    comm.reduce(in.data(), reduced.data(), count, DataType::kFloat32, to_last);
    for (std::size_t i = 0; rank == last && i < count; ++i) {
      ASSERT_EQ(reduced[i], ring_sum(size, i))
          << "rank " << rank << " index " << i << " count " << count << " (reduce)";
    }
  }
}

TEST_P(CrossRankCheckTest, RingCarriedAndPlainChecksMeet) {
  REQUIRE_RANKS(2);
  // Counts differ: the heads differ in size, and rank 0's first segment
  // fits its head while the others' does not.
  {
    const std::size_t count = rank == 0 ? 6 : 300001;
    std::vector<float> in(count, 1.0f), out(count, -7.0f);
    expect_raises<MismatchError>(
        [&] {
          comm.all_reduce(in.data(), out.data(), count, DataType::kFloat32,
                          ring<AllReduceOptions>());
        },
        {label("all_reduce"), "rank 0 count=6", "count=300001"}, rank);
    for (float v : out) ASSERT_EQ(v, -7.0f) << "rank " << rank << ": the output was touched";
    for (float v : in) ASSERT_EQ(v, 1.0f) << "rank " << rank << ": the input was touched";
  }
  // The last rank gathers (whose check is a round of its own) where the
  // others all_reduce (which carry it).
  {
    std::vector<float> in(4096, 1.0f), out(4096 * static_cast<std::size_t>(size), -7.0f);
    auto call = [&] {
      if (rank == last) {
        AllGatherOptions gather;
        gather.algorithm = Algorithm::kRing;
        comm.all_gather(in.data(), out.data(), in.size(), DataType::kFloat32, gather);
      } else {
        comm.all_reduce(in.data(), out.data(), in.size(), DataType::kFloat32,
                        ring<AllReduceOptions>());
      }
    };
    expect_raises<MismatchError>(call, {"all_reduce", "all_gather"}, rank);
    for (float v : out) ASSERT_EQ(v, -7.0f) << "rank " << rank << ": the output was touched";
  }
  // Rank 0 carries a whole small input for recursive_doubling, the others
  // the head of a ring segment.
  {
    AllReduceOptions options = rank == 0 ? recursive_doubling() : ring<AllReduceOptions>();
    std::vector<float> in(64, 1.0f), out(64, -7.0f);
    expect_raises<MismatchError>(
        [&] { comm.all_reduce(in.data(), in.data(), in.size(), DataType::kFloat32, options); },
        {label("all_reduce"), "algorithm=recursive_doubling", "algorithm=ring"}, rank);
    for (float v : in) ASSERT_EQ(v, 1.0f) << "rank " << rank << ": the input was touched";
  }
  expect_healthy();
}

std::string path_name(const ::testing::TestParamInfo<CheckPath>& info) {
  return info.param == CheckPath::kMpiMessages ? "MpiMessages" : "NodeBoard";
}

INSTANTIATE_TEST_SUITE_P(Paths, CrossRankCheckTest,
                         ::testing::Values(CheckPath::kMpiMessages, CheckPath::kNodeBoard),
                         path_name);
INSTANTIATE_TEST_SUITE_P(Paths, OneRankBadInputTest,
                         ::testing::Values(CheckPath::kMpiMessages, CheckPath::kNodeBoard),
                         path_name);

}  // namespace
}  // namespace collective
