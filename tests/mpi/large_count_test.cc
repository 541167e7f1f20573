// More than 2^31 elements in one all_reduce (int8, about 2 GiB per rank):
// MPI counts are int, so every algorithm must split its transfers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <vector>

#include "collective/collective.h"

namespace collective {
namespace {

// Element i of rank r holds (i + r) % 7, so inputs and sums repeat every 7
// elements: fill and check copy and compare whole blocks of that pattern,
// which keeps 2 GiB per pass at memory speed.
constexpr std::size_t kPeriod = 7;
constexpr std::size_t kBlock = kPeriod * 4096;

std::vector<std::int8_t> block_of(int first_rank, int ranks) {
  std::vector<std::int8_t> block(kBlock);
  for (std::size_t i = 0; i < kBlock; ++i) {
    int sum = 0;
    for (int r = first_rank; r < first_rank + ranks; ++r) {
      sum += static_cast<int>((i + static_cast<std::size_t>(r)) % kPeriod);
    }
    block[i] = static_cast<std::int8_t>(sum);
  }
  return block;
}

TEST(LargeCountTest, AllReduceAbove2To31Elements) {
  auto comm = Communicator::world();
  const std::size_t count = (std::size_t{1} << 31) + 77;
  std::unique_ptr<std::int8_t[]> buffer(new std::int8_t[count]);
  const int rank = comm.rank();
  const std::vector<std::int8_t> input = block_of(rank, 1);
  const std::vector<std::int8_t> expected = block_of(0, comm.size());
  for (Algorithm algorithm : {Algorithm::kRing, Algorithm::kMpi, Algorithm::kRecursiveDoubling}) {
    SCOPED_TRACE(std::string(to_string(algorithm)));
    for (std::size_t first = 0; first < count; first += kBlock) {
      std::memcpy(buffer.get() + first, input.data(), std::min(kBlock, count - first));
    }
    AllReduceOptions options;
    options.algorithm = algorithm;
    comm.all_reduce(buffer.get(), buffer.get(), count, DataType::kInt8, options);
    std::size_t wrong = 0;
    std::size_t first_wrong = 0;
    for (std::size_t first = 0; first < count; first += kBlock) {
      const std::size_t length = std::min(kBlock, count - first);
      if (std::memcmp(buffer.get() + first, expected.data(), length) == 0) continue;
      for (std::size_t i = 0; i < length; ++i) {
        if (buffer[first + i] == expected[i]) continue;
        if (wrong == 0) first_wrong = first + i;
        ++wrong;
      }
    }
    EXPECT_EQ(wrong, 0u) << "rank " << rank << ": first wrong index " << first_wrong << " (of "
                         << count << "): expected "
                         << static_cast<int>(expected[first_wrong % kBlock]) << ", actual "
                         << static_cast<int>(buffer[first_wrong]);
  }
}

}  // namespace
}  // namespace collective
