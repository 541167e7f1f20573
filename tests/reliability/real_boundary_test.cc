// One real crossing of the 2^31 boundary that the splitting tests emulate:
// an all_gather whose output is 2^31 bytes (two ranks of 2^30 int8 each, in
// place, so 2 GiB per rank), through the ring and through Open MPI.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "collective/collective.h"

namespace collective {
namespace {

TEST(RealBoundaryTest, AllGatherOfTwoToThe31Bytes) {
  auto comm = Communicator::world();
  ASSERT_EQ(comm.size(), 2) << "sized for 2 ranks";
  const std::size_t block = std::size_t{1} << 30;
  const std::size_t total = 2 * block;
  std::unique_ptr<std::int8_t[]> buffer(new std::int8_t[total]);
  // Differs between neighbours and between the two halves; cheap to compute
  // 2^31 times.
  auto value = [](std::size_t i) { return static_cast<std::int8_t>(i * 31 + (i >> 20)); };
  for (Algorithm algorithm : {Algorithm::kRing, Algorithm::kMpi}) {
    SCOPED_TRACE(std::string(to_string(algorithm)));
    std::int8_t* own = buffer.get() + static_cast<std::size_t>(comm.rank()) * block;
    std::memset(buffer.get(), 0xFF, total);
    for (std::size_t i = 0; i < block; ++i)
      own[i] = value(static_cast<std::size_t>(comm.rank()) * block + i);
    AllGatherOptions options;
    options.algorithm = algorithm;
    comm.all_gather(own, buffer.get(), block, DataType::kInt8, options);
    std::size_t wrong = 0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < total; ++i) {
      if (buffer[i] != value(i) && wrong++ == 0) first = i;
    }
    EXPECT_EQ(wrong, 0u) << "rank " << comm.rank() << ": first wrong index " << first << " of "
                         << total << ": expected " << static_cast<int>(value(first)) << ", actual "
                         << static_cast<int>(buffer[first]);
  }
}

}  // namespace
}  // namespace collective
