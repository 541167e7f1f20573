// What one rank of a bench run allocates (bench/memory_budget.h), with the
// overflow a size near 2^64 causes reported as such, never wrapped around.
#include <gtest/gtest.h>

#include <limits>
#include <tuple>
#include <vector>

#include "memory_budget.h"

namespace collective::bench {
namespace {

TEST(MemoryBudgetTest, SweepNeedsSendAndReceiveOfTheLargestSize) {
  BenchOptions options;
  options.min_bytes = 8;
  options.max_bytes = 1 << 20;
  options.iters = 10;
  options.collectives = {CollectiveKind::kAllReduce, CollectiveKind::kAllGather};
  const MemoryNeed need = memory_needed_per_rank(options, 4);
  // all_reduce: 1 MiB send + 1 MiB receive; all_gather at 4 ranks: 256 KiB
  // send + 1 MiB receive. Plus two timing vectors of 10 doubles, and a row
  // per size (8 B .. 1 MiB: 18) and collective (2).
  ASSERT_TRUE(need.bytes.has_value());
  EXPECT_EQ(*need.bytes, (std::size_t{2} << 20) + 160 + 18 * 2 * kBytesPerSweepRow);
  EXPECT_NE(need.what.find("all_reduce of 1 MiB of float32"), std::string::npos) << need.what;
}

TEST(MemoryBudgetTest, OverflowIsReportedNotWrapped) {
  BenchOptions options;
  options.min_bytes = std::numeric_limits<std::size_t>::max();
  options.max_bytes = options.min_bytes;
  EXPECT_FALSE(memory_needed_per_rank(options, 2).bytes.has_value());
}

TEST(MemoryBudgetTest, FusionCountsEveryTensor) {
  BenchOptions options;
  options.min_bytes = 64;
  options.max_bytes = 64;
  options.iters = 1;
  options.fusion_tensors = 1000;
  const MemoryNeed need = memory_needed_per_rank(options, 2);
  ASSERT_TRUE(need.bytes.has_value());
  EXPECT_EQ(*need.bytes, 1000u * (5 * 64 + 512) + 16 + kBytesPerFusionRow);
  options.fusion_tensors = std::numeric_limits<std::size_t>::max() / 100;
  EXPECT_FALSE(memory_needed_per_rank(options, 2).bytes.has_value());
}

// The sizes are counted, not listed: -f 1 -i 1 -e 1G is 2^30 sizes, whose
// list alone (8 GiB) once made the guard itself die of std::bad_alloc.
TEST(MemoryBudgetTest, StepSizesAreCountedWithoutListingThem) {
  BenchOptions options;
  options.min_bytes = 8;
  options.max_bytes = std::size_t{1} << 30;
  options.step_factor = 1;
  options.step_bytes = 1;
  EXPECT_EQ(options.size_count(), (std::size_t{1} << 30) - 7);
  EXPECT_EQ(options.largest_size(), std::size_t{1} << 30);
  const MemoryNeed need = memory_needed_per_rank(options, 2);
  ASSERT_TRUE(need.bytes.has_value());
  EXPECT_GE(*need.bytes, ((std::size_t{1} << 30) - 7) * kBytesPerSweepRow);
  EXPECT_NE(need.what.find("1073741817 sizes (-b 8 to -e 1073741824 in steps of -i 1)"),
            std::string::npos)
      << need.what;
  // Counting agrees with listing wherever listing is cheap.
  for (const auto& [min, max, factor, step] :
       std::vector<std::tuple<std::size_t, std::size_t, std::size_t, std::size_t>>{
           {8, 1 << 20, 2, 0},
           {0, 100, 2, 0},
           {7, 7, 3, 0},
           {8, 1000, 1, 7},
           {5, 4, 2, 0},
           {1, std::numeric_limits<std::size_t>::max(), 2, 0},
           {std::numeric_limits<std::size_t>::max() - 10, std::numeric_limits<std::size_t>::max(),
            1, 3}}) {
    options.min_bytes = min;
    options.max_bytes = max;
    options.step_factor = factor;
    options.step_bytes = step;
    const std::vector<std::size_t> listed = options.sizes();
    EXPECT_EQ(options.size_count(), listed.size())
        << min << ".." << max << " f" << factor << " i" << step;
    EXPECT_EQ(options.largest_size(), listed.empty() ? 0 : listed.back())
        << min << ".." << max << " f" << factor << " i" << step;
  }
}

}  // namespace
}  // namespace collective::bench
