// Counts around the message-size limit, where transfers split into several
// MPI messages (and, with the default limit of 2^30 B, where int counts
// would overflow past 2^31). Run with a small COLLECTIVE_MAX_MESSAGE_BYTES
// (CMakeLists.txt) so every boundary costs kilobytes, not gigabytes; the
// same code splits a 2^31-element buffer (real_boundary_test.cc).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "typed_buffer.h"

namespace collective {
namespace {

using testing::TypedBuffer;

std::size_t message_limit() {
  const char* value = std::getenv("COLLECTIVE_MAX_MESSAGE_BYTES");
  return value != nullptr ? std::strtoull(value, nullptr, 10) : std::size_t{1} << 30;
}

double value_of(int rank, std::size_t index) { return static_cast<double>((rank + index) % 5); }

TEST(BoundaryCountTest, EveryCollectiveAroundMultiplesOfTheMessageLimit) {
  const std::size_t limit = message_limit();
  ASSERT_LE(limit, 1u << 16) << "run with a small COLLECTIVE_MAX_MESSAGE_BYTES";
  auto comm = Communicator::world();
  const int size = comm.size();
  const int rank = comm.rank();
  const auto p = static_cast<std::size_t>(size);
  int calls = 0;
  for (DataType type :
       {DataType::kInt8, DataType::kFloat16, DataType::kInt32, DataType::kFloat64}) {
    const std::size_t per_limit = limit / element_size(type);
    for (std::size_t multiple : {1, 2, 3}) {
      for (long delta : {-1L, 0L, 1L}) {
        const std::size_t count = multiple * per_limit + static_cast<std::size_t>(delta);
        for (Algorithm algorithm :
             {Algorithm::kRing, Algorithm::kRecursiveDoubling, Algorithm::kMpi}) {
          const std::string where = std::string(to_string(algorithm)) + " " +
                                    std::string(to_string(type)) + " count " +
                                    std::to_string(count);
          SCOPED_TRACE(where);
          // all_reduce: every element.
          TypedBuffer in(type, count * p), out(type, count * p);
          for (std::size_t i = 0; i < count * p; ++i) in.set(i, value_of(rank, i));
          AllReduceOptions reduce_options;
          reduce_options.algorithm = algorithm;
          comm.all_reduce(in.data(), out.data(), count, type, reduce_options);
          ++calls;
          for (std::size_t i = 0; i < count; ++i) {
            double expected = 0;
            for (int r = 0; r < size; ++r) expected += value_of(r, i);
            ASSERT_EQ(out.get(i), expected) << "all_reduce rank " << rank << " index " << i;
          }
          if (algorithm == Algorithm::kRecursiveDoubling) continue;  // all_reduce only
          // reduce_scatter: this rank's block of the sum.
          ReduceScatterOptions scatter_options;
          scatter_options.algorithm = algorithm;
          comm.reduce_scatter(in.data(), out.data(), count, type, scatter_options);
          ++calls;
          for (std::size_t i = 0; i < count; ++i) {
            const std::size_t global = static_cast<std::size_t>(rank) * count + i;
            double expected = 0;
            for (int r = 0; r < size; ++r) expected += value_of(r, global);
            ASSERT_EQ(out.get(i), expected) << "reduce_scatter rank " << rank << " index " << i;
          }
          // all_gather: every rank's block.
          AllGatherOptions gather_options;
          gather_options.algorithm = algorithm;
          comm.all_gather(in.data(), out.data(), count, type, gather_options);
          ++calls;
          for (std::size_t i = 0; i < count * p; ++i) {
            ASSERT_EQ(out.get(i), value_of(static_cast<int>(i / count), i % count))
                << "all_gather rank " << rank << " index " << i;
          }
          // broadcast from the last rank.
          BroadcastOptions broadcast_options;
          broadcast_options.algorithm = algorithm;
          broadcast_options.root = size - 1;
          TypedBuffer shared(type, count);
          for (std::size_t i = 0; i < count; ++i) shared.set(i, value_of(rank, i));
          comm.broadcast(shared.data(), count, type, broadcast_options);
          ++calls;
          for (std::size_t i = 0; i < count; ++i) {
            ASSERT_EQ(shared.get(i), value_of(size - 1, i))
                << "broadcast rank " << rank << " index " << i;
          }
          // reduce to rank 0.
          ReduceOptions root_options;
          root_options.algorithm = algorithm;
          comm.reduce(in.data(), out.data(), count, type, root_options);
          ++calls;
          if (rank == 0) {
            for (std::size_t i = 0; i < count; ++i) {
              double expected = 0;
              for (int r = 0; r < size; ++r) expected += value_of(r, i);
              ASSERT_EQ(out.get(i), expected) << "reduce index " << i;
            }
          }
        }
      }
    }
  }
  if (rank == 0) std::printf("[ %d calls around multiples of %zu B ]\n", calls, limit);
}

}  // namespace
}  // namespace collective
