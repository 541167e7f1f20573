// More than 2^31 elements in one all_reduce (int8, about 2 GiB per rank):
// MPI counts are int, so every algorithm must split its transfers.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "collective/collective.h"
#include "typed_buffer.h"

namespace collective {
namespace {

using testing::check_periodic;
using testing::fill_periodic;
using testing::TypedBuffer;

// Element i of rank r holds (i + r) % 7, so inputs and sums repeat every 7
// elements and fill and check work a block of periods at a time, which
// keeps 2 GiB per pass at memory speed.
constexpr std::size_t kPeriod = 7;

TEST(LargeCountTest, AllReduceAbove2To31Elements) {
  auto comm = Communicator::world();
  const std::size_t count = (std::size_t{1} << 31) + 77;
  TypedBuffer buffer(DataType::kInt8, count);
  const int rank = comm.rank();
  const int size = comm.size();
  auto value = [](int r, std::size_t i) {
    return static_cast<double>((i + static_cast<std::size_t>(r)) % kPeriod);
  };
  auto expected = [&](std::size_t i) {
    double sum = 0;
    for (int r = 0; r < size; ++r) sum += value(r, i);
    return sum;
  };
  for (Algorithm algorithm : {Algorithm::kRing, Algorithm::kMpi, Algorithm::kRecursiveDoubling}) {
    SCOPED_TRACE(std::string(to_string(algorithm)));
    fill_periodic(buffer, 0, count, kPeriod, [&](std::size_t i) { return value(rank, i); });
    AllReduceOptions options;
    options.algorithm = algorithm;
    comm.all_reduce(buffer.data(), buffer.data(), count, DataType::kInt8, options);
    EXPECT_TRUE(check_periodic(buffer, 0, count, rank, kPeriod, expected));
  }
}

}  // namespace
}  // namespace collective
