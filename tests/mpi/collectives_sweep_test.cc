// Sweeps every algorithm x collective x dtype x op x count x in-place,
// with exact-by-construction inputs and every element checked.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collective/collective.h"
#include "typed_buffer.h"

namespace collective {
namespace {

using testing::check_periodic;
using testing::expected_value;
using testing::fill_periodic;
using testing::input_value;
using testing::TypedBuffer;
using testing::value_period;

const std::vector<std::size_t> kCounts = {0, 1, 7, 1023, (std::size_t{1} << 20) + 3};
const std::vector<DataType> kTypes = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                      DataType::kFloat64, DataType::kInt8,     DataType::kUInt8,
                                      DataType::kInt32,   DataType::kInt64};
const std::vector<ReduceOp> kOps = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                                    ReduceOp::kProd};

// The algorithms that serve a collective (auto included: it must pick one
// that works).
std::vector<Algorithm> algorithms_for(CollectiveKind kind) {
  if (kind == CollectiveKind::kAllReduce) {
    return {Algorithm::kAuto, Algorithm::kRing, Algorithm::kRecursiveDoubling, Algorithm::kMpi};
  }
  return {Algorithm::kAuto, Algorithm::kRing, Algorithm::kMpi};
}

std::string describe(Algorithm algorithm, DataType type, ReduceOp op, std::size_t count,
                     bool in_place) {
  return std::string(to_string(algorithm)) + " " + std::string(to_string(type)) + " " +
         std::string(to_string(op)) + " count=" + std::to_string(count) +
         (in_place ? " in-place" : " out-of-place");
}

class SweepTest : public ::testing::Test {
 protected:
  Communicator comm = Communicator::world();
  int rank = comm.rank();
  int size = comm.size();
};

TEST_F(SweepTest, AllReduce) {
  for (Algorithm algorithm : algorithms_for(CollectiveKind::kAllReduce)) {
    for (DataType type : kTypes) {
      for (ReduceOp op : kOps) {
        for (std::size_t count : kCounts) {
          for (bool in_place : {false, true}) {
            SCOPED_TRACE(describe(algorithm, type, op, count, in_place));
            TypedBuffer send(type, count);
            TypedBuffer recv(type, count);
            recv.poison();
            const std::size_t period = value_period(op);
            fill_periodic(send, 0, count, period,
                          [&](std::size_t i) { return input_value(op, type, rank, i); });
            AllReduceOptions options;
            options.op = op;
            options.algorithm = algorithm;
            if (in_place) {
              comm.all_reduce(send.data(), send.data(), count, type, options);
            } else {
              comm.all_reduce(send.data(), recv.data(), count, type, options);
            }
            const TypedBuffer& result = in_place ? send : recv;
            ASSERT_TRUE(check_periodic(result, 0, count, rank, period, [&](std::size_t i) {
              return expected_value(op, type, size, i);
            }));
            if (algorithm != Algorithm::kAuto) {
              EXPECT_EQ(comm.last_algorithm(), algorithm);
            }
          }
        }
      }
    }
  }
}

TEST_F(SweepTest, ReduceScatter) {
  for (Algorithm algorithm : algorithms_for(CollectiveKind::kReduceScatter)) {
    for (DataType type : kTypes) {
      for (ReduceOp op : kOps) {
        for (std::size_t count : kCounts) {
          for (bool in_place : {false, true}) {
            SCOPED_TRACE(describe(algorithm, type, op, count, in_place));
            const std::size_t total = count * static_cast<std::size_t>(size);
            TypedBuffer send(type, total);
            TypedBuffer recv(type, count);
            recv.poison();
            const std::size_t period = value_period(op);
            fill_periodic(send, 0, total, period,
                          [&](std::size_t i) { return input_value(op, type, rank, i); });
            ReduceScatterOptions options;
            options.op = op;
            options.algorithm = algorithm;
            const std::size_t own = static_cast<std::size_t>(rank) * count;
            if (in_place) {
              comm.reduce_scatter(send.data(), send.at(own), count, type, options);
            } else {
              comm.reduce_scatter(send.data(), recv.data(), count, type, options);
            }
            ASSERT_TRUE(check_periodic(
                in_place ? send : recv, in_place ? own : 0, count, rank, period,
                [&](std::size_t i) { return expected_value(op, type, size, own + i); }));
          }
        }
      }
    }
  }
}

TEST_F(SweepTest, AllGather) {
  for (Algorithm algorithm : algorithms_for(CollectiveKind::kAllGather)) {
    for (DataType type : kTypes) {
      for (std::size_t count : kCounts) {
        for (bool in_place : {false, true}) {
          SCOPED_TRACE(describe(algorithm, type, ReduceOp::kSum, count, in_place));
          const std::size_t total = count * static_cast<std::size_t>(size);
          TypedBuffer send(type, count);
          TypedBuffer recv(type, total);
          recv.poison();
          const std::size_t period = value_period(ReduceOp::kMax);
          auto values_of = [&](int from) {
            return [&, from](std::size_t i) { return input_value(ReduceOp::kMax, type, from, i); };
          };
          const std::size_t own = static_cast<std::size_t>(rank) * count;
          AllGatherOptions options;
          options.algorithm = algorithm;
          if (in_place) {
            fill_periodic(recv, own, count, period, values_of(rank));
            comm.all_gather(recv.at(own), recv.data(), count, type, options);
          } else {
            fill_periodic(send, 0, count, period, values_of(rank));
            comm.all_gather(send.data(), recv.data(), count, type, options);
          }
          for (int from = 0; from < size; ++from) {
            SCOPED_TRACE("block of rank " + std::to_string(from));
            ASSERT_TRUE(check_periodic(recv, static_cast<std::size_t>(from) * count, count, rank,
                                       period, values_of(from)));
          }
        }
      }
    }
  }
}

TEST_F(SweepTest, Broadcast) {
  for (Algorithm algorithm : algorithms_for(CollectiveKind::kBroadcast)) {
    for (DataType type : kTypes) {
      for (std::size_t count : kCounts) {
        for (int root : {0, size - 1, size / 2}) {
          SCOPED_TRACE(describe(algorithm, type, ReduceOp::kSum, count, true) +
                       " root=" + std::to_string(root));
          TypedBuffer buffer(type, count);
          buffer.poison();
          auto value = [&](std::size_t i) { return input_value(ReduceOp::kMax, type, root, i); };
          const std::size_t period = value_period(ReduceOp::kMax);
          if (rank == root) fill_periodic(buffer, 0, count, period, value);
          BroadcastOptions options;
          options.algorithm = algorithm;
          options.root = root;
          comm.broadcast(buffer.data(), count, type, options);
          ASSERT_TRUE(check_periodic(buffer, 0, count, rank, period, value));
        }
      }
    }
  }
}

TEST_F(SweepTest, Reduce) {
  for (Algorithm algorithm : algorithms_for(CollectiveKind::kReduce)) {
    for (DataType type : kTypes) {
      for (ReduceOp op : kOps) {
        for (std::size_t count : kCounts) {
          for (int root : {0, size - 1}) {
            for (bool in_place : {false, true}) {
              SCOPED_TRACE(describe(algorithm, type, op, count, in_place) +
                           " root=" + std::to_string(root));
              TypedBuffer send(type, count);
              TypedBuffer recv(type, count);
              recv.poison();
              const std::size_t period = value_period(op);
              fill_periodic(send, 0, count, period,
                            [&](std::size_t i) { return input_value(op, type, rank, i); });
              ReduceOptions options;
              options.op = op;
              options.algorithm = algorithm;
              options.root = root;
              const bool use_in_place = in_place && rank == root;
              comm.reduce(send.data(), use_in_place ? send.data() : recv.data(), count, type,
                          options);
              if (rank == root) {
                ASSERT_TRUE(check_periodic(
                    use_in_place ? send : recv, 0, count, rank, period,
                    [&](std::size_t i) { return expected_value(op, type, size, i); }));
              }
            }
          }
        }
      }
    }
  }
}

// The sweeps fill and check a period at a time: the inputs must repeat.
TEST(SweepValues, InputsRepeatWithTheirPeriod) {
  for (DataType type : kTypes) {
    for (ReduceOp op : kOps) {
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

TEST_F(SweepTest, Barrier) {
  for (Algorithm algorithm : {Algorithm::kAuto, Algorithm::kRecursiveDoubling, Algorithm::kMpi}) {
    BarrierOptions options;
    options.algorithm = algorithm;
    for (int i = 0; i < 20; ++i) comm.barrier(options);
  }
}

}  // namespace
}  // namespace collective
