// The periodic fill and check of typed_buffer.h (large_count_test's
// helpers): the inputs repeat with their period, and a wrong element is
// found and reported as check_elements reports it.
#include <gtest/gtest.h>

#include <string>

#include "typed_buffer.h"

namespace collective {
namespace {

using testing::check_periodic;
using testing::fill_periodic;
using testing::input_value;
using testing::TypedBuffer;
using testing::value_period;

const DataType kSweptTypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                DataType::kFloat64, DataType::kInt8,     DataType::kUInt8,
                                DataType::kInt32,   DataType::kInt64};
const ReduceOp kSweptOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                              ReduceOp::kProd};

TEST(SweepValues, InputsRepeatWithTheirPeriod) {
  for (DataType type : kSweptTypes) {
    for (ReduceOp op : kSweptOps) {
      const std::size_t period = value_period(op);
      for (int from = 0; from < 4; ++from) {
        for (std::size_t i = 0; i < 3 * period; ++i) {
          ASSERT_EQ(input_value(op, type, from, i), input_value(op, type, from, i + period))
              << to_string(type) << " " << to_string(op) << " rank " << from << " index " << i;
        }
      }
    }
  }
}

// A wrong element found by the periodic check is reported as check_elements
// reports it, within the first block of periods and beyond it.
TEST(SweepValues, PeriodicCheckFindsOneWrongElement) {
  auto value = [](std::size_t i) { return input_value(ReduceOp::kSum, DataType::kFloat32, 1, i); };
  const std::size_t period = value_period(ReduceOp::kSum);
  for (const std::size_t count : {std::size_t{1000}, std::size_t{100000}}) {
    SCOPED_TRACE("count " + std::to_string(count));
    TypedBuffer buffer(DataType::kFloat32, count);
    fill_periodic(buffer, 0, count, period, value);
    EXPECT_TRUE(check_periodic(buffer, 0, count, 0, period, value));
    const std::size_t wrong_index = count * 7 / 9;
    buffer.set(wrong_index, 1000.0);
    const ::testing::AssertionResult result = check_periodic(buffer, 0, count, 0, period, value);
    ASSERT_FALSE(result);
    EXPECT_NE(
        std::string(result.message()).find("1 of " + std::to_string(count) + " elements wrong"),
        std::string::npos)
        << result.message();
    EXPECT_NE(std::string(result.message())
                  .find("index " + std::to_string(wrong_index) + ": expected " +
                        std::to_string(static_cast<int>(value(wrong_index)))),
              std::string::npos)
        << result.message();
  }
}

}  // namespace
}  // namespace collective
