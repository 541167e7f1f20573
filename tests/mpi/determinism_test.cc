// Random floats (whose sums round): every rank must end with bitwise the
// same result, and the same algorithm must give bitwise the same result
// run after run.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <random>
#include <vector>

#include "collective/collective.h"
#include "typed_buffer.h"

namespace collective {
namespace {

std::uint64_t fingerprint(const void* data, std::size_t bytes) {
  // FNV-1a over the bytes.
  std::uint64_t hash = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
  return hash;
}

TEST(DeterminismTest, BitwiseIdenticalAcrossRanksAndRuns) {
  auto comm = Communicator::world();
  const std::size_t count = (1u << 18) + 17;
  for (DataType type :
       {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    for (Algorithm algorithm :
         {Algorithm::kRing, Algorithm::kRecursiveDoubling, Algorithm::kMpi, Algorithm::kAuto}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kProd}) {
        SCOPED_TRACE(std::string(to_string(algorithm)) + " " + std::string(to_string(type)) + " " +
                     std::string(to_string(op)));
        testing::TypedBuffer input(type, count);
        std::mt19937_64 generator(1234 + static_cast<unsigned>(comm.rank()));
        std::uniform_real_distribution<double> values(0.5, 1.5);
        for (std::size_t i = 0; i < count; ++i) input.set(i, values(generator));
        const std::size_t bytes = count * element_size(type);
        std::uint64_t first_run = 0;
        for (int run = 0; run < 2; ++run) {
          testing::TypedBuffer output(type, count);
          AllReduceOptions options;
          options.algorithm = algorithm;
          options.op = op;
          comm.all_reduce(input.data(), output.data(), count, type, options);
          const std::uint64_t mine = fingerprint(output.data(), bytes);
          std::vector<std::uint64_t> all(static_cast<std::size_t>(comm.size()));
          MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
          for (int r = 0; r < comm.size(); ++r) {
            EXPECT_EQ(all[static_cast<std::size_t>(r)], all[0])
                << "rank " << r << " differs from rank 0";
          }
          if (run == 0) first_run = mine;
          else EXPECT_EQ(mine, first_run) << "second run differs from the first";
        }
      }
    }
  }
}

}  // namespace
}  // namespace collective
