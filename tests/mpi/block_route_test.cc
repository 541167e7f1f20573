// The route of shared_memory's blocks of 64 KiB and more (the kernel's copy
// or the staging slots; algorithms/block_route_choice.h), chosen per call by
// the node's first rank and carried to the others in the exchange's first
// hand-off. Registered with the route measured (auto: the tuner's trials
// switch routes within the run), forced to either route, and with the
// ranks' settings differing (the first rank's must decide for all, or the
// ranks would wait on different routes). all_to_all, all_to_all_v,
// all_gather_v, gather and scatter, 40 calls each with blocks of 80 KiB to
// 400 KiB (uneven, none on rank 1 in the v-forms), in place and not; every
// element of every call checked on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace {

using collective::Algorithm;
using collective::Communicator;
using collective::DataType;

constexpr std::uint64_t kUntouched = 0xDEADBEEFDEADBEEFULL;
constexpr int kCalls = 40;
constexpr std::size_t kBase = 10240;  // elements of 8 bytes: 80 KiB

// Element i of what rank `from` sends rank `to` in call `call`.
std::uint64_t value(int call, int from, int to, std::size_t i) {
  return (static_cast<std::uint64_t>(call) << 52) ^ (static_cast<std::uint64_t>(from) << 44) ^
         (static_cast<std::uint64_t>(to) << 36) ^ (i * 2654435761u + 7);
}

bool any_rank_failed() {
  int failed = ::testing::Test::HasFailure() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return failed != 0;
}

// Checks `count` elements of `got` from `at` against expected(i); names the
// rank, the call, the block and the first wrong index.
template <typename Expected>
void expect_block(const std::vector<std::uint64_t>& got, std::size_t at, std::size_t count,
                  Expected expected, const std::string& what) {
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t want = expected(i);
    if (got[at + i] != want) {
      ADD_FAILURE() << what << ": element " << i << " expected " << want << " got " << got[at + i];
      return;
    }
  }
}

class BlockRoute : public testing::Test {
 protected:
  Communicator comm = Communicator::world();
  int rank = comm.rank();
  int size = comm.size();
  std::string where(const char* name, int call, int block) const {
    return std::string(name) + " rank " + std::to_string(rank) + " call " + std::to_string(call) +
           " block of rank " + std::to_string(block);
  }
};

TEST_F(BlockRoute, AllToAllEveryCallExact) {
  collective::AllToAllOptions options;
  options.algorithm = Algorithm::kSharedMemory;
  const auto p = static_cast<std::size_t>(size);
  for (int call = 0; call < kCalls; ++call) {
    const bool in_place = call % 4 == 3;
    // Sizes vary by call: a run crosses several size classes.
    const std::size_t count = kBase * (1 + static_cast<std::size_t>(call % 3));
    std::vector<std::uint64_t> send(count * p), recv(count * p, kUntouched);
    for (std::size_t q = 0; q < p; ++q) {
      for (std::size_t i = 0; i < count; ++i)
        (in_place ? recv : send)[q * count + i] = value(call, rank, static_cast<int>(q), i);
    }
    comm.all_to_all(in_place ? recv.data() : send.data(), recv.data(), count, DataType::kInt64,
                    options);
    for (std::size_t q = 0; q < p; ++q) {
      expect_block(
          recv, q * count, count,
          [&](std::size_t i) { return value(call, static_cast<int>(q), rank, i); },
          where("all_to_all", call, static_cast<int>(q)));
    }
    ASSERT_FALSE(any_rank_failed()) << "all_to_all call " << call;
  }
}

// v-forms: rank q's blocks are kBase * (q + 1) elements, none from rank 1.
std::size_t uneven(int q) { return q == 1 ? 0 : kBase * static_cast<std::size_t>(q + 1); }

TEST_F(BlockRoute, AllToAllVEveryCallExact) {
  collective::AllToAllOptions options;
  options.algorithm = Algorithm::kSharedMemory;
  const auto p = static_cast<std::size_t>(size);
  for (int call = 0; call < kCalls; ++call) {
    // What this rank sends each peer: its own uneven count; receives the peer's.
    std::vector<std::size_t> send_counts(p, uneven(rank)), recv_counts(p), send_displs(p),
        recv_displs(p);
    for (std::size_t q = 0; q < p; ++q) recv_counts[q] = uneven(static_cast<int>(q));
    // One element between blocks: misaligned blocks, and a write past one is seen.
    for (std::size_t q = 1; q < p; ++q) {
      send_displs[q] = send_displs[q - 1] + send_counts[q - 1] + 1;
      recv_displs[q] = recv_displs[q - 1] + recv_counts[q - 1] + 1;
    }
    std::vector<std::uint64_t> send(send_displs.back() + send_counts.back() + 1, kUntouched);
    std::vector<std::uint64_t> recv(recv_displs.back() + recv_counts.back() + 1, kUntouched);
    for (std::size_t q = 0; q < p; ++q) {
      for (std::size_t i = 0; i < send_counts[q]; ++i)
        send[send_displs[q] + i] = value(call, rank, static_cast<int>(q), i);
    }
    comm.all_to_all_v(send.data(), send_counts, send_displs, recv.data(), recv_counts, recv_displs,
                      DataType::kInt64, options);
    for (std::size_t q = 0; q < p; ++q) {
      expect_block(
          recv, recv_displs[q], recv_counts[q],
          [&](std::size_t i) { return value(call, static_cast<int>(q), rank, i); },
          where("all_to_all_v", call, static_cast<int>(q)));
      EXPECT_EQ(recv[recv_displs[q] + recv_counts[q]], kUntouched)
          << where("all_to_all_v", call, static_cast<int>(q)) << ": the gap after it was written";
    }
    ASSERT_FALSE(any_rank_failed()) << "all_to_all_v call " << call;
  }
}

TEST_F(BlockRoute, AllGatherVEveryCallExact) {
  collective::AllGatherOptions options;
  options.algorithm = Algorithm::kSharedMemory;
  const auto p = static_cast<std::size_t>(size);
  std::vector<std::size_t> counts(p), displs(p);
  for (std::size_t q = 0; q < p; ++q) counts[q] = uneven(static_cast<int>(q));
  for (std::size_t q = 1; q < p; ++q) displs[q] = displs[q - 1] + counts[q - 1] + 1;
  const auto own = static_cast<std::size_t>(rank);
  for (int call = 0; call < kCalls; ++call) {
    const bool in_place = call % 4 == 3;
    std::vector<std::uint64_t> send(counts[own]);
    std::vector<std::uint64_t> recv(displs.back() + counts.back() + 1, kUntouched);
    for (std::size_t i = 0; i < counts[own]; ++i) {
      (in_place ? recv[displs[own] + i] : send[i]) = value(call, rank, -1, i);
    }
    comm.all_gather_v(in_place ? recv.data() + displs[own] : send.data(), counts[own], recv.data(),
                      counts, displs, DataType::kInt64, options);
    for (std::size_t q = 0; q < p; ++q) {
      expect_block(
          recv, displs[q], counts[q],
          [&](std::size_t i) { return value(call, static_cast<int>(q), -1, i); },
          where("all_gather_v", call, static_cast<int>(q)));
      EXPECT_EQ(recv[displs[q] + counts[q]], kUntouched)
          << where("all_gather_v", call, static_cast<int>(q)) << ": the gap after it was written";
    }
    ASSERT_FALSE(any_rank_failed()) << "all_gather_v call " << call;
  }
}

TEST_F(BlockRoute, GatherAndScatterEveryCallExact) {
  const auto p = static_cast<std::size_t>(size);
  const std::size_t count = kBase * 2;
  for (int call = 0; call < kCalls; ++call) {
    const int root = call % size;
    {
      collective::GatherOptions options;
      options.algorithm = Algorithm::kSharedMemory;
      options.root = root;
      std::vector<std::uint64_t> send(count), recv(rank == root ? count * p : 0, kUntouched);
      for (std::size_t i = 0; i < count; ++i) send[i] = value(call, rank, root, i);
      comm.gather(send.data(), recv.data(), count, DataType::kInt64, options);
      if (rank == root) {
        for (std::size_t q = 0; q < p; ++q) {
          expect_block(
              recv, q * count, count,
              [&](std::size_t i) { return value(call, static_cast<int>(q), root, i); },
              where("gather", call, static_cast<int>(q)));
        }
      }
    }
    {
      collective::ScatterOptions options;
      options.algorithm = Algorithm::kSharedMemory;
      options.root = root;
      std::vector<std::uint64_t> send(rank == root ? count * p : 0), recv(count, kUntouched);
      if (rank == root) {
        for (std::size_t q = 0; q < p; ++q) {
          for (std::size_t i = 0; i < count; ++i)
            send[q * count + i] = value(call, root, static_cast<int>(q), i);
        }
      }
      comm.scatter(send.data(), recv.data(), count, DataType::kInt64, options);
      expect_block(
          recv, 0, count, [&](std::size_t i) { return value(call, root, rank, i); },
          where("scatter", call, root));
    }
    ASSERT_FALSE(any_rank_failed()) << "gather/scatter call " << call;
  }
}

}  // namespace
