// The checker must accept every correct result, whatever order an
// algorithm combines ranks in and however it rounds partial results, and
// must catch wrong ones. Simulated reductions here stand in for the ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "element_types.h"
#include "value_pattern.h"

namespace collective::cases {
namespace {

constexpr int kRankCounts[] = {1, 2, 3, 4, 5, 7, 8, 16, 64};

template <typename E>
typename E::Storage from_integer(std::int64_t v) {
  if constexpr (E::kFloating) {
    return E::from_double(static_cast<double>(v));
  } else {
    return static_cast<typename E::Storage>(v);
  }
}

// Combines ranks in `order`, rounding to the element type after every step
// (as an algorithm that forwards partial results does); 16-bit floats and
// float32 combine in float, float64 in double, integers wrap.
template <typename E>
typename E::Storage simulate(const ValuePattern& pattern, std::uint64_t index,
                             const std::vector<int>& order) {
  using Storage = typename E::Storage;
  const ReduceOp op = pattern.op();
  Storage acc = from_integer<E>(pattern.input(order[0], index));
  for (std::size_t k = 1; k < order.size(); ++k) {
    const Storage x = from_integer<E>(pattern.input(order[k], index));
    if constexpr (E::kFloating) {
      using Math = std::conditional_t<std::is_same_v<Storage, double>, double, float>;
      const auto a = static_cast<Math>(E::to_double(acc));
      const auto b = static_cast<Math>(E::to_double(x));
      Math r = 0;
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kMean: r = a + b; break;
        case ReduceOp::kMin: r = std::min(a, b); break;
        case ReduceOp::kMax: r = std::max(a, b); break;
        case ReduceOp::kProd: r = a * b; break;
        case ReduceOp::kBitwiseAnd:
        case ReduceOp::kBitwiseOr:
        case ReduceOp::kBitwiseXor: ADD_FAILURE() << "bitwise op on a floating type"; break;
      }
      acc = E::from_double(r);
    } else {
      const auto a = static_cast<std::uint64_t>(static_cast<std::int64_t>(acc));
      const auto b = static_cast<std::uint64_t>(static_cast<std::int64_t>(x));
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kMean: acc = static_cast<Storage>(a + b); break;
        case ReduceOp::kMin: acc = std::min(acc, x); break;
        case ReduceOp::kMax: acc = std::max(acc, x); break;
        case ReduceOp::kProd: acc = static_cast<Storage>(a * b); break;
        case ReduceOp::kBitwiseAnd: acc = static_cast<Storage>(a & b); break;
        case ReduceOp::kBitwiseOr: acc = static_cast<Storage>(a | b); break;
        case ReduceOp::kBitwiseXor: acc = static_cast<Storage>(a ^ b); break;
      }
    }
  }
  if (op == ReduceOp::kMean) {
    const int n = pattern.ranks();
    if constexpr (E::kFloating) {
      using Math = std::conditional_t<std::is_same_v<Storage, double>, double, float>;
      acc = E::from_double(static_cast<Math>(E::to_double(acc)) / static_cast<Math>(n));
    } else {
      acc = static_cast<Storage>(static_cast<std::int64_t>(acc) / n);
    }
  }
  return acc;
}

class PatternTest : public testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

TEST_P(PatternTest, AcceptsEveryOrderAndCatchesACorruptElement) {
  const auto [type, op] = GetParam();
  constexpr std::size_t kCount = 301;
  constexpr std::uint64_t kFirst = 1000;  // a block that does not start at index 0
  std::mt19937 random(7);
  for (const int ranks : kRankCounts) {
    const ValuePattern pattern = ValuePattern::reduction(type, op, ranks);
    visit_type(type, [&](auto element) {
      using E = decltype(element);
      std::vector<typename E::Storage> result(kCount);
      std::vector<int> order(static_cast<std::size_t>(ranks));
      std::iota(order.begin(), order.end(), 0);
      for (std::size_t i = 0; i < kCount; ++i) {
        std::shuffle(order.begin(), order.end(), random);
        result[i] = simulate<E>(pattern, kFirst + i, order);
      }
      Region region{result.data(), kCount, kFirst};
      const WrongElements none = check_reduction(pattern, region);
      EXPECT_EQ(none.count, 0u) << to_string(type) << " " << to_string(op) << " at " << ranks
                                << " ranks: index " << none.first_index << " expected "
                                << none.first_expected << ", got " << none.first_actual;
      corrupt_element(type, region, 17);
      const WrongElements one = check_reduction(pattern, region);
      EXPECT_EQ(one.count, 1u) << to_string(type) << " " << to_string(op) << " at " << ranks;
      EXPECT_EQ(one.first_index, 17u);  // the position in the result buffer
    });
  }
}

TEST_P(PatternTest, CatchesAMissingRank) {
  const auto [type, op] = GetParam();
  constexpr std::size_t kCount = 400;
  const int ranks = 4;
  const ValuePattern pattern = ValuePattern::reduction(type, op, ranks);
  visit_type(type, [&](auto element) {
    using E = decltype(element);
    std::vector<typename E::Storage> result(kCount);
    // Ranks 0, 1, 3: rank 2's contribution is lost (MEAN also divides by 4).
    for (std::size_t i = 0; i < kCount; ++i) result[i] = simulate<E>(pattern, i, {0, 1, 3});
    const WrongElements wrong = check_reduction(pattern, Region{result.data(), kCount, 0});
    // MIN and MAX only change where rank 2 held the sole extreme.
    EXPECT_GT(wrong.count, kCount / 20) << to_string(type) << " " << to_string(op);
  });
}

TEST_P(PatternTest, TimingValuesAreFixedPointsOfTheOp) {
  // Timed in-place iterations reduce their own output again and again: the
  // values must not grow (overflow, infinities, denormals change the speed).
  const auto [type, op] = GetParam();
  visit_type(type, [&](auto element) {
    using E = decltype(element);
    typename E::Storage stored{};
    fill_timing_values(type, op, Region{&stored, 1, 0});
    double v = 0;
    if constexpr (E::kFloating) {
      v = E::to_double(stored);
    } else {
      v = static_cast<double>(stored);
    }
    for (const int ranks : {2, 3, 4}) {
      double combined = v;
      for (int r = 1; r < ranks; ++r) {
        if (op == ReduceOp::kSum || op == ReduceOp::kMean) combined += v;
        if (op == ReduceOp::kProd) combined *= v;
        const auto bits = static_cast<std::int64_t>(v);
        if (op == ReduceOp::kBitwiseAnd) combined = static_cast<double>(bits & bits);
        if (op == ReduceOp::kBitwiseOr) combined = static_cast<double>(bits | bits);
        if (op == ReduceOp::kBitwiseXor) {
          combined = static_cast<double>(static_cast<std::int64_t>(combined) ^ bits);
        }
      }
      if (op == ReduceOp::kMean) combined /= ranks;
      EXPECT_EQ(combined, v) << to_string(type) << " " << to_string(op) << " at " << ranks;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(
    EveryTypeAndOp, PatternTest,
    testing::Combine(testing::Values(DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                     DataType::kFloat64, DataType::kInt8, DataType::kUInt8,
                                     DataType::kInt32, DataType::kInt64),
                     testing::Values(ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin,
                                     ReduceOp::kMax, ReduceOp::kProd)),
    [](const auto& info) {
      return std::string(to_string(std::get<0>(info.param))) + "_" +
             std::string(to_string(std::get<1>(info.param)));
    });

INSTANTIATE_TEST_SUITE_P(IntegerTypesBitwiseOps, PatternTest,
                         testing::Combine(testing::Values(DataType::kInt8, DataType::kUInt8,
                                                          DataType::kInt32, DataType::kInt64),
                                          testing::Values(ReduceOp::kBitwiseAnd,
                                                          ReduceOp::kBitwiseOr,
                                                          ReduceOp::kBitwiseXor)),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) + "_" +
                                  std::string(to_string(std::get<1>(info.param)));
                         });

TEST(CopyPattern, AllGatherLayoutAndMisplacedBlocks) {
  for (const DataType type : {DataType::kFloat16, DataType::kBFloat16, DataType::kInt8,
                              DataType::kUInt8, DataType::kInt64}) {
    const int ranks = 3;
    const std::size_t block = 50;
    const ValuePattern pattern = ValuePattern::copy(type, ranks);
    visit_type(type, [&](auto element) {
      using E = decltype(element);
      std::vector<typename E::Storage> gathered(block * ranks);
      ResultLayout by_block{gathered.data(), {}};
      for (int r = 0; r < ranks; ++r) {
        const std::size_t first = static_cast<std::size_t>(r) * block;
        fill_inputs(pattern, r, Region{gathered.data() + first, block, first});
        by_block.parts.push_back(ResultPart{first, block, r, first});
      }
      EXPECT_EQ(check_result(pattern, by_block).count, 0u) << to_string(type);
      EXPECT_EQ(check_result(pattern, by_block).checked, block * ranks) << to_string(type);
      // Blocks 0 and 1 swapped: most elements differ.
      std::swap_ranges(gathered.begin(), gathered.begin() + block, gathered.begin() + block);
      EXPECT_GT(check_result(pattern, by_block).count, block) << to_string(type);
      // Broadcast from root 2 is checked against rank 2's input only.
      std::vector<typename E::Storage> broadcast(block);
      fill_inputs(pattern, 2, Region{broadcast.data(), block, 0});
      EXPECT_EQ(check_result(pattern, {broadcast.data(), {ResultPart{0, block, 2, 0}}}).count, 0u);
      EXPECT_GT(check_result(pattern, {broadcast.data(), {ResultPart{0, block, 1, 0}}}).count,
                block / 2);
    });
  }
}

// Fills and checks work a period at a time: inputs repeat with
// kValuePeriod, a fill equals input() element by element across period
// boundaries, and every wrong element is counted however far in it lies.
TEST(PeriodicPattern, FillsAndChecksAcrossPeriods) {
  const std::uint64_t first = kValuePeriod - 5;  // the fill starts just before a boundary
  const std::size_t count = 2 * kValuePeriod + 11;
  for (const DataType type : {DataType::kBFloat16, DataType::kInt8, DataType::kFloat64}) {
    for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kProd}) {
      const ValuePattern pattern = ValuePattern::reduction(type, op, 3);
      for (std::uint64_t i = 0; i < 100; ++i) {
        ASSERT_EQ(pattern.input(1, i), pattern.input(1, i + kValuePeriod)) << i;
      }
      visit_type(type, [&](auto element) {
        using E = decltype(element);
        std::vector<typename E::Storage> filled(count);
        fill_inputs(pattern, 2, Region{filled.data(), count, first});
        for (std::size_t j = 0; j < count; ++j) {
          ASSERT_EQ(filled[j], from_integer<E>(pattern.input(2, first + j)))
              << to_string(type) << " element " << j;
        }
        const ResultLayout layout{filled.data(), {ResultPart{0, count, 2, first}}};
        EXPECT_EQ(check_result(pattern, layout).count, 0u);
        // Wrong elements in the first, second and last period.
        for (const std::size_t j : {std::size_t{3}, std::size_t{kValuePeriod + 100}, count - 1}) {
          corrupt_element(type, Region{filled.data(), count, first}, j);
        }
        const WrongElements wrong = check_result(pattern, layout);
        EXPECT_EQ(wrong.count, 3u) << to_string(type) << " " << to_string(op);
        EXPECT_EQ(wrong.checked, count);
        EXPECT_EQ(wrong.first_index, 3u);
        EXPECT_NE(describe_wrong(wrong, 2).find("rank 2: 3 of " + std::to_string(count) +
                                                " elements wrong; first at index 3: expected "),
                  std::string::npos)
            << describe_wrong(wrong, 2);
      });
    }
  }
}

TEST(Sentinel, IsNeverACorrectResult) {
  for (int t = 0; t < kNumDataTypes; ++t) {
    const auto type = static_cast<DataType>(t);
    for (int o = 0; o < kNumReduceOps; ++o) {
      const auto op = static_cast<ReduceOp>(o);
      if (!op_applies_to(op, type)) continue;
      const ValuePattern pattern = ValuePattern::reduction(type, op, 4);
      std::vector<std::int64_t> storage(64);  // room for 64 of any type
      Region region{storage.data(), 64, 0};
      fill_sentinel(type, region);
      EXPECT_EQ(check_reduction(pattern, region).count, 64u) << to_string(type);
    }
  }
}

TEST(Inputs, AreSmallIntegersThatDifferByRankAndIndex) {
  const ValuePattern pattern = ValuePattern::reduction(DataType::kFloat32, ReduceOp::kSum, 4);
  int differing_ranks = 0;
  int differing_indices = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    for (int r = 0; r < 4; ++r) {
      EXPECT_LE(std::llabs(pattern.input(r, i)), 3);
    }
    differing_ranks += pattern.input(0, i) != pattern.input(1, i);
    differing_indices += pattern.input(0, i) != pattern.input(0, i + 1);
  }
  EXPECT_GT(differing_ranks, 500);
  EXPECT_GT(differing_indices, 300);
}

}  // namespace
}  // namespace collective::cases
