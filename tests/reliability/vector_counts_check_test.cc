// The cross-rank check of the v-forms' counts (cross_rank_check/
// vector_counts_check.h): a count that one rank sends and another expects
// differently (all_to_all_v, gather_v, scatter_v), or recv_counts that
// differ between ranks (all_gather_v, reduce_scatter_v), raise a
// MismatchError on every rank that names the pair (or entry) and both
// values, before any receive buffer is touched; afterwards the
// communicator works. Both ways the check travels: MPI messages and the
// node's shared segment.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "expect_error.h"

namespace collective {
namespace {

using testing::expect_raises;

#define REQUIRE_RANKS(minimum) \
  if (size < (minimum)) GTEST_SKIP() << "needs " << (minimum) << " ranks"

constexpr float kSentinel = -7.0f;

enum class CheckPath { kMpiMessages, kNodeBoard };

// What rank `from` sends rank `to` in the agreeing calls: 1 to 4 elements.
std::size_t pair_count(int from, int to) { return 1 + static_cast<std::size_t>(3 * from + to) % 4; }

// Contiguous blocks of `counts`.
std::vector<std::size_t> displacements_of(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> displacements(counts.size());
  std::size_t next = 0;
  for (std::size_t q = 0; q < counts.size(); ++q) {
    displacements[q] = next;
    next += counts[q];
  }
  return displacements;
}

class VectorCountsCheckTest : public ::testing::TestWithParam<CheckPath> {
 protected:
  void SetUp() override {
    rank = comm.rank();
    size = comm.size();
    last = size - 1;
    if (GetParam() == CheckPath::kNodeBoard) {
      if (comm.topology().node_count() != 1) GTEST_SKIP() << "the ranks span nodes: no node board";
      AllReduceOptions options;  // a shared-memory call sets up the segment
      options.algorithm = Algorithm::kSharedMemory;
      std::vector<float> warm(4, 1.0f);
      comm.all_reduce(warm.data(), warm.data(), warm.size(), DataType::kFloat32, options);
    }
  }

  std::string label(const char* kind) const {
    return std::string(kind) + " #" + std::to_string(comm.sequence_number());
  }

  // Every element of `buffer` still holds the sentinel.
  void expect_untouched(const std::vector<float>& buffer, const char* what) const {
    for (std::size_t i = 0; i < buffer.size(); ++i) {
      ASSERT_EQ(buffer[i], kSentinel) << "rank " << rank << ": " << what << "[" << i
                                      << "] was written by a call that failed its check";
    }
  }

  // An agreeing all_to_all_v gives the exact result, and the communicator
  // is healthy.
  void expect_healthy() {
    std::vector<std::size_t> send_counts(static_cast<std::size_t>(size));
    std::vector<std::size_t> recv_counts(static_cast<std::size_t>(size));
    for (int q = 0; q < size; ++q) {
      send_counts[static_cast<std::size_t>(q)] = pair_count(rank, q);
      recv_counts[static_cast<std::size_t>(q)] = pair_count(q, rank);
    }
    const auto send_displacements = displacements_of(send_counts);
    const auto recv_displacements = displacements_of(recv_counts);
    std::vector<float> send(4 * static_cast<std::size_t>(size));
    for (int q = 0; q < size; ++q) {
      for (std::size_t k = 0; k < send_counts[static_cast<std::size_t>(q)]; ++k) {
        send[send_displacements[static_cast<std::size_t>(q)] + k] =
            static_cast<float>(100 * rank + 10 * q + static_cast<int>(k));
      }
    }
    std::vector<float> recv(4 * static_cast<std::size_t>(size), kSentinel);
    comm.all_to_all_v(send.data(), send_counts, send_displacements, recv.data(), recv_counts,
                      recv_displacements, DataType::kFloat32);
    for (int q = 0; q < size; ++q) {
      for (std::size_t k = 0; k < recv_counts[static_cast<std::size_t>(q)]; ++k) {
        const std::size_t at = recv_displacements[static_cast<std::size_t>(q)] + k;
        const auto expected = static_cast<float>(100 * q + 10 * rank + static_cast<int>(k));
        ASSERT_EQ(recv[at], expected) << "rank " << rank << ": recv[" << at << "] from rank " << q;
      }
    }
  }

  // all_to_all_v with the agreeing counts, except those `adjust` changes
  // on this rank; expects a MismatchError containing `needles` on every
  // rank and the receive buffer untouched.
  template <typename Adjust>
  void expect_all_to_all_v_mismatch(Adjust adjust, std::initializer_list<std::string> needles) {
    std::vector<std::size_t> send_counts(static_cast<std::size_t>(size));
    std::vector<std::size_t> recv_counts(static_cast<std::size_t>(size));
    for (int q = 0; q < size; ++q) {
      send_counts[static_cast<std::size_t>(q)] = pair_count(rank, q);
      recv_counts[static_cast<std::size_t>(q)] = pair_count(q, rank);
    }
    adjust(send_counts, recv_counts);
    const auto send_displacements = displacements_of(send_counts);
    const auto recv_displacements = displacements_of(recv_counts);
    std::vector<float> send(16 * static_cast<std::size_t>(size), 1.0f);
    std::vector<float> recv(16 * static_cast<std::size_t>(size), kSentinel);
    expect_raises<MismatchError>(
        [&] {
          comm.all_to_all_v(send.data(), send_counts, send_displacements, recv.data(), recv_counts,
                            recv_displacements, DataType::kFloat32);
        },
        needles, rank);
    expect_untouched(recv, "recv");
  }

  Communicator comm = Communicator::world().split(0, Communicator::world().rank());
  int rank = 0;
  int size = 1;
  int last = 0;
};

std::string n(std::size_t value) { return std::to_string(value); }
std::string r(int rank) { return std::to_string(rank); }

// The receiver expects more than is sent: MPI would return a short block
// silently.
TEST_P(VectorCountsCheckTest, AllToAllVReceiverExpectsMore) {
  REQUIRE_RANKS(2);
  const std::size_t sent = pair_count(0, last);
  expect_all_to_all_v_mismatch(
      [&](auto&, auto& recv_counts) {
        if (rank == last) recv_counts[0] += 2;
      },
      {label("all_to_all_v"), "rank 0 sends " + n(sent) + " elements to rank " + r(last) +
                                  ", which expects " + n(sent + 2) + " from rank 0"});
  expect_healthy();
}

// The sender sends more than is expected: MPI would truncate.
TEST_P(VectorCountsCheckTest, AllToAllVSenderSendsMore) {
  REQUIRE_RANKS(2);
  const std::size_t expected = pair_count(last, 0);
  expect_all_to_all_v_mismatch(
      [&](auto& send_counts, auto&) {
        if (rank == last) send_counts[0] += 3;
      },
      {label("all_to_all_v"), "rank " + r(last) + " sends " + n(expected + 3) +
                                  " elements to rank 0, which expects " + n(expected) +
                                  " from rank " + r(last)});
  expect_healthy();
}

// Every rank sends one element too many to its successor: the first pair
// is named, and how many disagree.
TEST_P(VectorCountsCheckTest, AllToAllVManyPairsNameTheFirst) {
  REQUIRE_RANKS(2);
  const std::size_t expected = pair_count(0, 1);
  expect_all_to_all_v_mismatch(
      [&](auto& send_counts, auto&) {
        send_counts[static_cast<std::size_t>((rank + 1) % size)] += 1;
      },
      {label("all_to_all_v"),
       "rank 0 sends " + n(expected + 1) + " elements to rank 1, which expects " + n(expected) +
           " from rank 0",
       "(" + r(size) + " pairs of ranks disagree; this is the first)"});
  expect_healthy();
}

// In place the receive counts are also the send counts.
TEST_P(VectorCountsCheckTest, AllToAllVInPlace) {
  REQUIRE_RANKS(2);
  // Symmetric counts agree in place.
  const auto symmetric = [](int a, int b) { return 1 + static_cast<std::size_t>(a + b) % 3; };
  std::vector<std::size_t> counts(static_cast<std::size_t>(size));
  for (int q = 0; q < size; ++q) counts[static_cast<std::size_t>(q)] = symmetric(rank, q);
  if (rank == 0) counts[static_cast<std::size_t>(last)] += 1;
  const auto displacements = displacements_of(counts);
  std::vector<float> buffer(8 * static_cast<std::size_t>(size), kSentinel);
  const std::size_t agreed = symmetric(0, last);
  expect_raises<MismatchError>(
      [&] {
        comm.all_to_all_v(buffer.data(), {}, {}, buffer.data(), counts, displacements,
                          DataType::kFloat32);
      },
      {label("all_to_all_v"),
       "rank 0 sends " + n(agreed + 1) + " elements to rank " + r(last) + ", which expects " +
           n(agreed) + " from rank 0",
       "(2 pairs of ranks disagree; this is the first)"},
      rank);
  expect_untouched(buffer, "buffer");
  expect_healthy();
}

// A rank's send_count against the root's recv_counts, with the root last
// and rank 0 disagreeing (more, then fewer).
TEST_P(VectorCountsCheckTest, GatherVSendCountAgainstRootsRecvCounts) {
  REQUIRE_RANKS(2);
  for (const std::size_t sent : {5u, 1u}) {
    GatherOptions options;
    options.root = last;
    std::vector<std::size_t> recv_counts(static_cast<std::size_t>(size), 3);
    const auto displacements = displacements_of(recv_counts);
    const std::size_t send_count = rank == 0 ? sent : 3;
    std::vector<float> send(8, 1.0f);
    std::vector<float> recv(3 * static_cast<std::size_t>(size), kSentinel);
    const bool root = rank == last;
    expect_raises<MismatchError>(
        [&] {
          comm.gather_v(
              send.data(), send_count, root ? recv.data() : nullptr,
              root ? std::span<const std::size_t>(recv_counts) : std::span<const std::size_t>(),
              root ? std::span<const std::size_t>(displacements) : std::span<const std::size_t>(),
              DataType::kFloat32, options);
        },
        {label("gather_v"),
         "rank 0 sends " + n(sent) + " elements to rank " + r(last) +
             ", which expects 3 from rank 0",
         "send_count must equal recv_counts[rank] on the root"},
        rank);
    expect_untouched(recv, "recv");
  }
  expect_healthy();
}

// The root's send_counts[q] against rank q's recv_count, root 0 and rank
// last disagreeing (it expects more, then fewer).
TEST_P(VectorCountsCheckTest, ScatterVRootsSendCountsAgainstRecvCount) {
  REQUIRE_RANKS(2);
  for (const std::size_t expected : {6u, 2u}) {
    ScatterOptions options;
    options.root = 0;
    std::vector<std::size_t> send_counts(static_cast<std::size_t>(size), 4);
    const auto displacements = displacements_of(send_counts);
    std::vector<float> send(4 * static_cast<std::size_t>(size), 1.0f);
    std::vector<float> recv(8, kSentinel);
    const std::size_t recv_count = rank == last ? expected : 4;
    const bool root = rank == 0;
    expect_raises<MismatchError>(
        [&] {
          comm.scatter_v(
              root ? send.data() : nullptr,
              root ? std::span<const std::size_t>(send_counts) : std::span<const std::size_t>(),
              root ? std::span<const std::size_t>(displacements) : std::span<const std::size_t>(),
              recv.data(), recv_count, DataType::kFloat32, options);
        },
        {label("scatter_v"),
         "rank 0 sends 4 elements to rank " + r(last) + ", which expects " + n(expected) +
             " from rank 0",
         "send_counts[q] on the root must equal recv_count on rank q"},
        rank);
    expect_untouched(recv, "recv");
  }
  expect_healthy();
}

// recv_counts that differ between ranks are named by their first
// differing entry, not by a hash.
TEST_P(VectorCountsCheckTest, AllGatherVRecvCountsNameTheEntry) {
  REQUIRE_RANKS(2);
  std::vector<std::size_t> recv_counts(static_cast<std::size_t>(size), 2);
  if (rank == last) recv_counts[0] = 5;  // not its own entry: its local check passes
  const auto displacements = displacements_of(recv_counts);
  std::vector<float> send(2, 1.0f);
  std::vector<float> recv(2 * static_cast<std::size_t>(size) + 3, kSentinel);
  expect_raises<MismatchError>(
      [&] {
        comm.all_gather_v(send.data(), 2, recv.data(), recv_counts, displacements,
                          DataType::kFloat32);
      },
      {label("all_gather_v"),
       "the ranks' recv_counts differ: recv_counts[0] is 2 on rank 0 and 5 on rank " + r(last),
       "recv_counts must be the same on every rank"},
      rank);
  expect_untouched(recv, "recv");
  expect_healthy();
}

TEST_P(VectorCountsCheckTest, ReduceScatterVRecvCountsNameTheEntry) {
  REQUIRE_RANKS(3);  // the differing entry is neither rank's own
  std::vector<std::size_t> recv_counts(static_cast<std::size_t>(size), 3);
  if (rank == last) recv_counts[1] = 1;  // ranks 0 .. last-1 agree
  std::vector<float> send(3 * static_cast<std::size_t>(size), 1.0f);
  std::vector<float> recv(3, kSentinel);
  expect_raises<MismatchError>(
      [&] { comm.reduce_scatter_v(send.data(), recv.data(), recv_counts, DataType::kFloat32); },
      {label("reduce_scatter_v"), "recv_counts[1] is 3 on rank 0 and 1 on rank " + r(last)}, rank);
  expect_untouched(recv, "recv");
  expect_healthy();
}

// Agreeing counts of every kind pass on every path (the terms of the
// pair sum cancel), with exact results.
TEST_P(VectorCountsCheckTest, AgreeingCountsPass) {
  for (int round = 0; round < 3; ++round) expect_healthy();
  GatherOptions gather;
  gather.root = last;
  std::vector<std::size_t> counts(static_cast<std::size_t>(size));
  for (int q = 0; q < size; ++q) counts[static_cast<std::size_t>(q)] = pair_count(q, last);
  const auto displacements = displacements_of(counts);
  std::vector<float> send(4, static_cast<float>(rank + 1));
  std::vector<float> gathered(4 * static_cast<std::size_t>(size), kSentinel);
  comm.gather_v(send.data(), counts[static_cast<std::size_t>(rank)], gathered.data(), counts,
                displacements, DataType::kFloat32, gather);
  if (rank == last) {
    for (int q = 0; q < size; ++q) {
      for (std::size_t k = 0; k < counts[static_cast<std::size_t>(q)]; ++k) {
        const std::size_t at = displacements[static_cast<std::size_t>(q)] + k;
        ASSERT_EQ(gathered[at], static_cast<float>(q + 1))
            << "rank " << rank << ": gathered[" << at << "]";
      }
    }
  }
  ScatterOptions scatter;
  scatter.root = 0;
  std::vector<float> scattered(4, kSentinel);
  std::vector<float> source(4 * static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<float>(i);
  comm.scatter_v(source.data(), counts, displacements, scattered.data(),
                 counts[static_cast<std::size_t>(rank)], DataType::kFloat32, scatter);
  for (std::size_t k = 0; k < 4; ++k) {
    const float expected =
        k < counts[static_cast<std::size_t>(rank)]
            ? static_cast<float>(displacements[static_cast<std::size_t>(rank)] + k)
            : kSentinel;
    ASSERT_EQ(scattered[k], expected) << "rank " << rank << ": scattered[" << k << "]";
  }
}

std::string path_name(const ::testing::TestParamInfo<CheckPath>& info) {
  return info.param == CheckPath::kMpiMessages ? "MpiMessages" : "NodeBoard";
}

INSTANTIATE_TEST_SUITE_P(Paths, VectorCountsCheckTest,
                         ::testing::Values(CheckPath::kMpiMessages, CheckPath::kNodeBoard),
                         path_name);

}  // namespace
}  // namespace collective
