// The arithmetic under the shared-memory algorithms, without MPI: region
// layout and the fixed-order reduction of several inputs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/multi_source_reduce.h"
#include "algorithms/node_phases.h"
#include "collective/in_tree/half_precision.h"

namespace collective::internal {
namespace {

TEST(RegionLayout, CoversTheBufferInAlignedBalancedRegions) {
  for (const std::size_t element : {1u, 2u, 4u, 8u}) {
    for (const int owners : {1, 2, 3, 4, 7}) {
      for (const std::size_t count : {0u, 1u, 15u, 16u, 17u, 100u, 1000u, 4099u, 65536u}) {
        const RegionLayout layout(count, owners, element);
        std::size_t covered = 0;
        std::size_t smallest = SIZE_MAX;
        std::size_t largest = 0;
        for (int j = 0; j < owners; ++j) {
          EXPECT_EQ(layout.offset(j), covered) << count << "/" << owners << " region " << j;
          if (layout.length(j) > 0) {
            EXPECT_EQ(layout.offset(j) * element % 64, 0u) << "region " << j << " not 64-B aligned";
          }
          covered += layout.length(j);
          if (j + 1 < owners) {
            smallest = std::min(smallest, layout.length(j));
            largest = std::max(largest, layout.length(j));
          }
        }
        EXPECT_EQ(covered, count) << count << " elements, " << owners << " owners";
        if (owners > 1) {
          EXPECT_LE(largest - smallest, layout.unit());
        }
      }
    }
  }
}

TEST(ReduceSources, SumsInOrderForEveryCountAndAliasing) {
  for (const int n : {1, 2, 3, 4, 5}) {
    for (const std::size_t count : {1u, 7u, 2048u, 2049u, 5000u}) {
      std::vector<std::vector<std::int32_t>> inputs(static_cast<std::size_t>(n),
                                                    std::vector<std::int32_t>(count));
      std::vector<const void*> sources;
      for (int q = 0; q < n; ++q) {
        for (std::size_t i = 0; i < count; ++i) {
          inputs[static_cast<std::size_t>(q)][i] = static_cast<std::int32_t>(i * 3 + q * 1000);
        }
        sources.push_back(inputs[static_cast<std::size_t>(q)].data());
      }
      for (int alias = -1; alias < n; ++alias) {
        std::vector<std::int32_t> separate(count);
        auto copies = inputs;
        std::vector<const void*> aliased_sources;
        for (auto& copy : copies) aliased_sources.push_back(copy.data());
        void* destination =
            alias < 0 ? separate.data() : copies[static_cast<std::size_t>(alias)].data();
        reduce_sources(destination, aliased_sources.data(), n, count, DataType::kInt32,
                       ReduceOp::kSum, 1);
        const auto* result = static_cast<const std::int32_t*>(destination);
        for (std::size_t i = 0; i < count; ++i) {
          const std::int32_t expected =
              static_cast<std::int32_t>(n * i * 3 + 1000 * n * (n - 1) / 2);
          ASSERT_EQ(result[i], expected)
              << "n " << n << " count " << count << " alias " << alias << " index " << i;
        }
      }
    }
  }
}

TEST(ReduceSources, MeanDividesOnceAndIntegerMeanTruncates) {
  const std::int64_t a[] = {7, -7, 5};
  const std::int64_t b[] = {0, 0, 5};
  const std::int64_t c[] = {0, 0, 6};
  const void* sources[] = {a, b, c};
  std::int64_t out[3];
  reduce_sources(out, sources, 3, 3, DataType::kInt64, ReduceOp::kMean, 3);
  EXPECT_EQ(out[0], 2);   // 7/3 toward zero
  EXPECT_EQ(out[1], -2);  // -7/3 toward zero
  EXPECT_EQ(out[2], 5);
  const double x[] = {1.0, 3.0};
  const double y[] = {2.0, 6.0};
  const void* doubles[] = {x, y};
  double mean[2];
  reduce_sources(mean, doubles, 2, 2, DataType::kFloat64, ReduceOp::kMean, 2);
  EXPECT_EQ(mean[0], 1.5);
  EXPECT_EQ(mean[1], 4.5);
}

// 1 + eight times 2^-11 in float16: rounding after every addition loses each
// increment (1 + 2^-11 ties to 1), accumulating in float32 keeps them all
// (1 + 2^-8 is a float16 value).
TEST(ReduceSources, HalfPrecisionAccumulatesInFloat32AndRoundsOnce) {
  const int n = 9;
  std::vector<std::uint16_t> values(static_cast<std::size_t>(n));
  values[0] = float_to_float16(1.0f);
  for (int q = 1; q < n; ++q)
    values[static_cast<std::size_t>(q)] = float_to_float16(1.0f / 2048.0f);
  std::vector<const void*> sources;
  for (int q = 0; q < n; ++q) sources.push_back(&values[static_cast<std::size_t>(q)]);
  std::uint16_t out = 0;
  reduce_sources(&out, sources.data(), n, 1, DataType::kFloat16, ReduceOp::kSum, 1);
  EXPECT_EQ(float16_to_float(out), 1.0f + 8.0f / 2048.0f);

  std::vector<std::uint16_t> bvalues(static_cast<std::size_t>(n));
  bvalues[0] = float_to_bfloat16(1.0f);
  for (int q = 1; q < n; ++q)
    bvalues[static_cast<std::size_t>(q)] = float_to_bfloat16(1.0f / 256.0f);
  std::vector<const void*> bsources;
  for (int q = 0; q < n; ++q) bsources.push_back(&bvalues[static_cast<std::size_t>(q)]);
  reduce_sources(&out, bsources.data(), n, 1, DataType::kBFloat16, ReduceOp::kSum, 1);
  EXPECT_EQ(bfloat16_to_float(out), 1.0f + 8.0f / 256.0f);

  // MEAN divides the float32 sum before the one rounding.
  std::uint16_t three[] = {float_to_float16(1.0f), float_to_float16(2.0f), float_to_float16(4.0f)};
  const void* mean_sources[] = {&three[0], &three[1], &three[2]};
  reduce_sources(&out, mean_sources, 3, 1, DataType::kFloat16, ReduceOp::kMean, 3);
  EXPECT_EQ(out, float_to_float16(7.0f / 3.0f));
}

TEST(ReduceSources, MinMaxProdAndNaN) {
  const float a[] = {1.0f, -2.0f, 3.0f, std::numeric_limits<float>::quiet_NaN()};
  const float b[] = {4.0f, -5.0f, 0.5f, 1.0f};
  const float c[] = {-1.0f, 2.0f, 2.0f, 2.0f};
  const void* sources[] = {a, b, c};
  float out[4];
  reduce_sources(out, sources, 3, 4, DataType::kFloat32, ReduceOp::kMin, 1);
  EXPECT_EQ(out[0], -1.0f);
  EXPECT_EQ(out[1], -5.0f);
  EXPECT_EQ(out[2], 0.5f);
  EXPECT_TRUE(out[3] != out[3]);
  reduce_sources(out, sources, 3, 4, DataType::kFloat32, ReduceOp::kMax, 1);
  EXPECT_EQ(out[0], 4.0f);
  EXPECT_EQ(out[1], 2.0f);
  EXPECT_EQ(out[2], 3.0f);
  reduce_sources(out, sources, 3, 4, DataType::kFloat32, ReduceOp::kProd, 1);
  EXPECT_EQ(out[0], -4.0f);
  EXPECT_EQ(out[1], 20.0f);
  EXPECT_EQ(out[2], 3.0f);
}

}  // namespace
}  // namespace collective::internal
