// More than 2^31 elements in one all_reduce (int8, about 2 GiB per rank):
// MPI counts are int, so every algorithm must split its transfers.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "collective/collective.h"

namespace collective {
namespace {

TEST(LargeCountTest, AllReduceAbove2To31Elements) {
  auto comm = Communicator::world();
  const std::size_t count = (std::size_t{1} << 31) + 77;
  std::unique_ptr<std::int8_t[]> buffer(new std::int8_t[count]);
  const int rank = comm.rank();
  const int size = comm.size();
  auto value = [&](int r, std::size_t i) { return static_cast<int>((i + static_cast<std::size_t>(r)) % 7); };
  for (Algorithm algorithm : {Algorithm::kRing, Algorithm::kMpi, Algorithm::kRecursiveDoubling}) {
    SCOPED_TRACE(std::string(to_string(algorithm)));
    for (std::size_t i = 0; i < count; ++i) buffer[i] = static_cast<std::int8_t>(value(rank, i));
    AllReduceOptions options;
    options.algorithm = algorithm;
    comm.all_reduce(buffer.get(), buffer.get(), count, DataType::kInt8, options);
    std::size_t wrong = 0;
    std::size_t first_wrong = 0;
    for (std::size_t i = 0; i < count; ++i) {
      int expected = 0;
      for (int r = 0; r < size; ++r) expected += value(r, i);
      if (buffer[i] != expected) {
        if (wrong == 0) first_wrong = i;
        ++wrong;
      }
    }
    EXPECT_EQ(wrong, 0u) << "rank " << rank << ": first wrong index " << first_wrong
                         << " (of " << count << ")";
  }
}

}  // namespace
}  // namespace collective
