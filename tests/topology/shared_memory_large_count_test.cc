// shared_memory all-reduce, all_gather_v, scatter_v and gather_v of more
// than 2^31 elements (uint8, in place, 2 GiB per rank) at 2 ranks: counts,
// offsets and cross-memory-attach reads past 32 bits.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "collective/collective.h"

namespace collective {
namespace {

bool all_ranks_agree(bool ok) {
  int value = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return value == 1;
}

// More than 2^31 elements (in place, uint8: 2 GiB per rank) at 2 ranks; at
// one rank no algorithm runs, and more would not fit this machine's memory
// beside other jobs.
TEST(SharedMemory, MoreThanTwoToThe31Elements) {
  Communicator world = Communicator::world();
  if (world.size() != 2) GTEST_SKIP() << "2 GiB per rank is run at 2 ranks only";
  const std::size_t count = (std::size_t{1} << 31) + 3;
  constexpr std::size_t kMarkerStride = std::size_t{1} << 20;
  std::vector<std::uint8_t> buffer(count, 1);
  // Markers: 2 + rank at every stride and in the last element.
  auto marked = [&](std::size_t i) { return i % kMarkerStride == 0 || i == count - 1; };
  for (std::size_t i = 0; i < count; i += kMarkerStride)
    buffer[i] = static_cast<std::uint8_t>(2 + world.rank());
  buffer[count - 1] = static_cast<std::uint8_t>(2 + world.rank());
  AllReduceOptions options;
  options.algorithm = Algorithm::kSharedMemory;
  world.all_reduce(buffer.data(), buffer.data(), count, DataType::kUInt8, options);
  const auto plain = static_cast<std::uint8_t>(world.size());
  const auto marker = static_cast<std::uint8_t>(2 * 2 + 1);  // (2 + 0) + (2 + 1)
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint8_t expected = marked(i) ? marker : plain;
    if (buffer[i] != expected && ++wrong <= 3) {
      ADD_FAILURE() << "rank " << world.rank() << " index " << i << " expected " << +expected
                    << " got " << +buffer[i];
    }
  }
  EXPECT_EQ(wrong, 0u);
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

// Element i of the block rank `from` contributes: every index distinct
// modulo 251, and past 2^31 too.
std::uint8_t byte_of(int from, std::size_t i) {
  return static_cast<std::uint8_t>((i + static_cast<std::size_t>(from) * 101) % 251);
}

// Checks `count` elements at `at` of `buffer` against rank `from`'s block;
// names the first three wrong ones.
void expect_block(const std::vector<std::uint8_t>& buffer, std::size_t at, std::size_t count,
                  int from, const char* what, int rank) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint8_t expected = byte_of(from, i);
    if (buffer[at + i] != expected && ++wrong <= 3) {
      ADD_FAILURE() << what << ": rank " << rank << " index " << at + i << " expected " << +expected
                    << " got " << +buffer[at + i];
    }
  }
  EXPECT_EQ(wrong, 0u) << what << ": rank " << rank;
}

// Rank 0's block is 2^31 + 3 elements, rank 1's 5, lying after it (its
// offset past 2^31): all_gather_v moves the large block from rank 0 to 1,
// scatter_v from root 1 to rank 0, gather_v from rank 0 to root 1, each in
// place in one 2 GiB buffer per rank, read by cross-memory attach (one
// read of more than the kernel's 2 GiB limit per call).
TEST(SharedMemory, GathersAndScattersOfMoreThanTwoToThe31Elements) {
  Communicator world = Communicator::world();
  if (world.size() != 2) GTEST_SKIP() << "2 GiB per rank is run at 2 ranks only";
  const int rank = world.rank();
  const std::size_t large = (std::size_t{1} << 31) + 3;
  const std::vector<std::size_t> counts{large, 5};
  const std::vector<std::size_t> displs{0, large};
  const std::size_t total = large + 5;
  std::vector<std::uint8_t> buffer(total, 0xEE);
  auto fill_own = [&] {
    for (std::size_t i = 0; i < counts[static_cast<std::size_t>(rank)]; ++i)
      buffer[displs[static_cast<std::size_t>(rank)] + i] = byte_of(rank, i);
  };

  fill_own();
  AllGatherOptions all_gather;
  all_gather.algorithm = Algorithm::kSharedMemory;
  world.all_gather_v(buffer.data() + displs[static_cast<std::size_t>(rank)],
                     counts[static_cast<std::size_t>(rank)], buffer.data(), counts, displs,
                     DataType::kUInt8, all_gather);
  EXPECT_EQ(world.last_algorithm(), Algorithm::kSharedMemory);
  expect_block(buffer, 0, large, 0, "all_gather_v", rank);
  expect_block(buffer, large, 5, 1, "all_gather_v", rank);
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));

  // scatter_v from root 1, in place there: rank 0 gets rank 0's block.
  if (rank == 1) {
    for (std::size_t i = 0; i < large; ++i) buffer[i] = byte_of(0, i);
  } else {
    std::fill(buffer.begin(), buffer.end(), std::uint8_t{0xEE});
  }
  ScatterOptions scatter;
  scatter.algorithm = Algorithm::kSharedMemory;
  scatter.root = 1;
  world.scatter_v(buffer.data(), counts, displs, rank == 1 ? buffer.data() + large : buffer.data(),
                  counts[static_cast<std::size_t>(rank)], DataType::kUInt8, scatter);
  EXPECT_EQ(world.last_algorithm(), Algorithm::kSharedMemory);
  if (rank == 0) expect_block(buffer, 0, large, 0, "scatter_v", rank);
  if (rank == 1) expect_block(buffer, large, 5, 1, "scatter_v (own block)", rank);
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));

  // gather_v to root 1, in place there: rank 0's block comes back.
  if (rank == 1) std::fill(buffer.begin(), buffer.begin() + large, std::uint8_t{0xEE});
  GatherOptions gather;
  gather.algorithm = Algorithm::kSharedMemory;
  gather.root = 1;
  world.gather_v(rank == 1 ? buffer.data() + large : buffer.data(),
                 counts[static_cast<std::size_t>(rank)], buffer.data(), counts, displs,
                 DataType::kUInt8, gather);
  EXPECT_EQ(world.last_algorithm(), Algorithm::kSharedMemory);
  if (rank == 1) {
    expect_block(buffer, 0, large, 0, "gather_v", rank);
    expect_block(buffer, large, 5, 1, "gather_v (own block)", rank);
  }
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

}  // namespace
}  // namespace collective
