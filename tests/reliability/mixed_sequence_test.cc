// Correct programs that mix sizes, collectives and algorithms must finish:
// a large point-to-point collective followed by a small shared-memory one
// once hung, because Open MPI's single-copy rendezvous needed the sending
// rank to enter MPI again while it waited on shared memory (issue 13).
// ctest runs this with Open MPI's default transports and with each of its
// single-copy mechanisms; a hang ends as a TimeoutError (COLLECTIVE_TIMEOUT).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace collective {
namespace {

class MixedSequenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rank = world.rank();
    size = world.size();
  }
  void TearDown() override { MPI_Barrier(MPI_COMM_WORLD); }

  // Exact: small integers in float32.
  void small_all_reduce(Algorithm algorithm = Algorithm::kAuto) {
    std::vector<float> values(4);
    for (int i = 0; i < 4; ++i) values[i] = static_cast<float>(rank + i);
    AllReduceOptions options;
    options.algorithm = algorithm;
    world.all_reduce(values.data(), values.data(), values.size(), DataType::kFloat32, options);
    for (int i = 0; i < 4; ++i) {
      const float expected = static_cast<float>(size * (size - 1) / 2 + size * i);
      ASSERT_EQ(values[i], expected) << "rank " << rank << " index " << i;
    }
  }

  void large_all_gather(std::size_t per_rank, Algorithm algorithm) {
    std::vector<std::int32_t> mine(per_rank);
    for (std::size_t i = 0; i < per_rank; ++i)
      mine[i] = static_cast<std::int32_t>(rank * 7 + i % 1009);
    std::vector<std::int32_t> all(per_rank * size, -1);
    AllGatherOptions options;
    options.algorithm = algorithm;
    world.all_gather(mine.data(), all.data(), per_rank, DataType::kInt32, options);
    for (int r = 0; r < size; ++r) {
      for (std::size_t i = 0; i < per_rank; ++i) {
        const auto expected = static_cast<std::int32_t>(r * 7 + i % 1009);
        const std::int32_t actual = all[r * per_rank + i];
        if (actual != expected) {
          FAIL() << "rank " << rank << ": all_gather index " << r * per_rank + i << " (from rank "
                 << r << ") expected " << expected << " actual " << actual;
        }
      }
    }
  }

  void large_reduce_scatter(std::size_t per_rank, Algorithm algorithm) {
    std::vector<std::int32_t> input(per_rank * size);
    for (std::size_t i = 0; i < input.size(); ++i)
      input[i] = static_cast<std::int32_t>(rank + i % 13);
    std::vector<std::int32_t> output(per_rank, -1);
    ReduceScatterOptions options;
    options.algorithm = algorithm;
    world.reduce_scatter(input.data(), output.data(), per_rank, DataType::kInt32, options);
    for (std::size_t i = 0; i < per_rank; ++i) {
      const std::size_t global = rank * per_rank + i;
      const auto expected = static_cast<std::int32_t>(size * (size - 1) / 2 + size * (global % 13));
      if (output[i] != expected) {
        FAIL() << "rank " << rank << ": reduce_scatter index " << i << " expected " << expected
               << " actual " << output[i];
      }
    }
  }

  void large_all_reduce(std::size_t count, Algorithm algorithm) {
    std::vector<std::int32_t> values(count);
    for (std::size_t i = 0; i < count; ++i)
      values[i] = static_cast<std::int32_t>(rank * 3 + i % 17);
    AllReduceOptions options;
    options.algorithm = algorithm;
    world.all_reduce(values.data(), values.data(), count, DataType::kInt32, options);
    for (std::size_t i = 0; i < count; ++i) {
      const auto expected = static_cast<std::int32_t>(3 * size * (size - 1) / 2 + size * (i % 17));
      if (values[i] != expected) {
        FAIL() << "rank " << rank << ": all_reduce index " << i << " expected " << expected
               << " actual " << values[i];
      }
    }
  }

  void large_broadcast(std::size_t count, Algorithm algorithm) {
    const int root = size - 1;
    std::vector<std::int32_t> values(count, -1);
    if (rank == root) {
      for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<std::int32_t>(i % 4099);
    }
    BroadcastOptions options;
    options.root = root;
    options.algorithm = algorithm;
    world.broadcast(values.data(), count, DataType::kInt32, options);
    for (std::size_t i = 0; i < count; ++i) {
      if (values[i] != static_cast<std::int32_t>(i % 4099)) {
        FAIL() << "rank " << rank << ": broadcast index " << i << " expected " << i % 4099
               << " actual " << values[i];
      }
    }
  }

  Communicator world = Communicator::world();
  int rank = 0;
  int size = 1;
};

// 64 MiB per rank: the size of the reported hang (AUTO picks the ring).
constexpr std::size_t kLargeInts = (64u << 20) / sizeof(std::int32_t);
constexpr int kRepeats = 3;

TEST_F(MixedSequenceTest, SmallThenLargeAllGatherThenSmall) {
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    small_all_reduce();
    large_all_gather(kLargeInts, Algorithm::kAuto);
    small_all_reduce();
  }
}

TEST_F(MixedSequenceTest, LargeReduceScatterThenSmall) {
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    large_reduce_scatter(kLargeInts / 4, Algorithm::kAuto);
    small_all_reduce();
  }
}

// Every point-to-point algorithm, then a shared-memory call, at sizes on
// both sides of Open MPI's rendezvous and single-copy thresholds.
TEST_F(MixedSequenceTest, EveryAlgorithmThenSharedMemory) {
  for (std::size_t count : {std::size_t{3}, std::size_t{1} << 14, std::size_t{1} << 20}) {
    for (Algorithm algorithm : {Algorithm::kRing, Algorithm::kRecursiveDoubling,
                                Algorithm::kHierarchical, Algorithm::kMpi}) {
      SCOPED_TRACE(std::string(to_string(algorithm)) + " count " + std::to_string(count));
      large_all_reduce(count, algorithm);
      small_all_reduce(Algorithm::kSharedMemory);
      // Recursive doubling and hierarchical serve all_reduce only.
      const bool all_reduce_only =
          algorithm == Algorithm::kRecursiveDoubling || algorithm == Algorithm::kHierarchical;
      const Algorithm other = all_reduce_only ? Algorithm::kRing : algorithm;
      large_all_gather(count, other);
      small_all_reduce(Algorithm::kSharedMemory);
      large_broadcast(count, other);
      small_all_reduce(Algorithm::kSharedMemory);
    }
  }
}

// Alternating large and small calls of every collective under AUTO.
TEST_F(MixedSequenceTest, AlternatingAutoSequence) {
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    large_all_reduce(std::size_t{1} << 22, Algorithm::kAuto);
    small_all_reduce();
    large_broadcast(std::size_t{1} << 22, Algorithm::kAuto);
    small_all_reduce();
    large_reduce_scatter(std::size_t{1} << 20, Algorithm::kAuto);
    large_all_gather(std::size_t{1} << 20, Algorithm::kAuto);
    world.barrier();
    small_all_reduce();
  }
}

}  // namespace
}  // namespace collective
