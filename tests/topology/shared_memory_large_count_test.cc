// shared_memory all-reduce of more than 2^31 elements (uint8, in place,
// 2 GiB per rank) at 2 ranks: counts and offsets past 32 bits.
#include <gtest/gtest.h>
#include <mpi.h>

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

}  // namespace
}  // namespace collective
