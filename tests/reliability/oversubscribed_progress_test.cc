// Eight ranks on two cores: every wait yields, so every algorithm still
// completes (the per-call timeout of the test environment bounds each
// call), with exact results.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace collective {
namespace {

TEST(OversubscribedProgressTest, EveryAlgorithmCompletes) {
  auto comm = Communicator::world();
  const int size = comm.size();
  const int rank = comm.rank();
  for (Algorithm algorithm : {Algorithm::kRing, Algorithm::kRecursiveDoubling, Algorithm::kMpi}) {
    SCOPED_TRACE(std::string(to_string(algorithm)));
    for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{300001}}) {
      const int calls = count == 1 ? 300 : (count == 1000 ? 50 : 3);
      std::vector<std::int64_t> values(count);
      for (int call = 0; call < calls; ++call) {
        for (std::size_t i = 0; i < count; ++i) values[i] = rank + static_cast<std::int64_t>(i);
        AllReduceOptions options;
        options.algorithm = algorithm;
        comm.all_reduce(values.data(), values.data(), count, DataType::kInt64, options);
        for (std::size_t i = 0; i < count; ++i) {
          ASSERT_EQ(values[i], static_cast<std::int64_t>(size) * static_cast<std::int64_t>(i) +
                                   size * (size - 1) / 2)
              << "rank " << rank << " index " << i;
        }
      }
    }
  }
  std::vector<std::int32_t> shared(4096);
  for (int call = 0; call < 100; ++call) {
    for (std::size_t i = 0; i < shared.size(); ++i) shared[i] = rank == call % size ? call : -1;
    BroadcastOptions options;
    options.root = call % size;
    comm.broadcast(std::span<std::int32_t>(shared), options);
    for (std::int32_t v : shared) ASSERT_EQ(v, call) << "rank " << rank;
    comm.barrier();
  }
}

}  // namespace
}  // namespace collective
