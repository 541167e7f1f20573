// What one rank of a bench run allocates (bench/memory_budget.h), with the
// overflow a size near 2^64 causes reported as such, never wrapped around.
#include <gtest/gtest.h>

#include <limits>

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
  // send + 1 MiB receive. Plus two timing vectors of 10 doubles.
  ASSERT_TRUE(need.bytes.has_value());
  EXPECT_EQ(*need.bytes, (std::size_t{2} << 20) + 160);
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
  EXPECT_EQ(*need.bytes, 1000u * (5 * 64 + 512) + 16);
  options.fusion_tensors = std::numeric_limits<std::size_t>::max() / 100;
  EXPECT_FALSE(memory_needed_per_rank(options, 2).bytes.has_value());
}

}  // namespace
}  // namespace collective::bench
