#include <gtest/gtest.h>

#include "collective/algorithm.h"
#include "collective/errors.h"
#include "collective/types.h"

namespace collective {
namespace {

TEST(NamesTest, DataTypesRoundTrip) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    const auto type = static_cast<DataType>(i);
    EXPECT_EQ(parse_data_type(to_string(type)), type);
  }
  EXPECT_EQ(parse_data_type("half"), DataType::kFloat16);
  EXPECT_EQ(parse_data_type("BF16"), DataType::kBFloat16);
  EXPECT_FALSE(parse_data_type("float128"));
  EXPECT_EQ(element_size(DataType::kBFloat16), 2u);
  EXPECT_EQ(element_size(DataType::kInt64), 8u);
  EXPECT_THROW(element_size(static_cast<DataType>(99)), InvalidArgumentError);
  EXPECT_EQ(to_string(static_cast<DataType>(99)), "unknown");
}

TEST(NamesTest, OpsAlgorithmsAndCollectives) {
  for (int i = 0; i < kNumReduceOps; ++i) {
    EXPECT_EQ(parse_reduce_op(to_string(static_cast<ReduceOp>(i))), static_cast<ReduceOp>(i));
  }
  for (int i = 0; i < kNumAlgorithms; ++i) {
    EXPECT_EQ(parse_algorithm(to_string(static_cast<Algorithm>(i))), static_cast<Algorithm>(i));
  }
  EXPECT_EQ(parse_collective_kind("all_reduce"), CollectiveKind::kAllReduce);
  EXPECT_FALSE(parse_algorithm("tree"));
  EXPECT_EQ(parse_reduce_op("avg"), ReduceOp::kMean);
}

TEST(ErrorsTest, MessageNamesOperationRankAndCause) {
  const TimeoutError error("all_reduce #3", 2, "waited for rank 1");
  EXPECT_STREQ(error.what(), "all_reduce #3 (rank 2): waited for rank 1");
  EXPECT_EQ(error.rank(), 2);
  const CommunicationError& base = error;
  EXPECT_EQ(base.operation(), "all_reduce #3");
}

}  // namespace
}  // namespace collective
