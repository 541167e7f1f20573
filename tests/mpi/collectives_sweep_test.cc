// Sweeps every algorithm x collective x dtype x op x count x in-place,
// with exact-by-construction inputs and every element checked.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collective/collective.h"
#include "typed_buffer.h"

namespace collective {
namespace {

using testing::TypedBuffer;
using testing::check_elements;
using testing::expected_value;
using testing::input_value;

const std::vector<std::size_t> kCounts = {0, 1, 7, 1023, (std::size_t{1} << 20) + 3};
const std::vector<DataType> kTypes = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                      DataType::kFloat64, DataType::kInt8,     DataType::kUInt8,
                                      DataType::kInt32,   DataType::kInt64};
const std::vector<ReduceOp> kOps = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin,
                                    ReduceOp::kMax, ReduceOp::kProd};

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
            for (std::size_t i = 0; i < count; ++i) send.set(i, input_value(op, type, rank, i));
            AllReduceOptions options;
            options.op = op;
            options.algorithm = algorithm;
            if (in_place) {
              comm.all_reduce(send.data(), send.data(), count, type, options);
            } else {
              comm.all_reduce(send.data(), recv.data(), count, type, options);
            }
            const TypedBuffer& result = in_place ? send : recv;
            ASSERT_TRUE(check_elements(result, 0, count, rank, [&](std::size_t i) {
              return expected_value(op, type, size, i);
            }));
            if (algorithm != Algorithm::kAuto) EXPECT_EQ(comm.last_algorithm(), algorithm);
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
            for (std::size_t i = 0; i < total; ++i) send.set(i, input_value(op, type, rank, i));
            ReduceScatterOptions options;
            options.op = op;
            options.algorithm = algorithm;
            const std::size_t own = static_cast<std::size_t>(rank) * count;
            if (in_place) {
              comm.reduce_scatter(send.data(), send.at(own), count, type, options);
            } else {
              comm.reduce_scatter(send.data(), recv.data(), count, type, options);
            }
            ASSERT_TRUE(check_elements(in_place ? send : recv, in_place ? own : 0, count, rank,
                                       [&](std::size_t i) {
                                         return expected_value(op, type, size, own + i);
                                       }));
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
          auto value = [&](int from, std::size_t i) {
            return input_value(ReduceOp::kMax, type, from, i);
          };
          const std::size_t own = static_cast<std::size_t>(rank) * count;
          AllGatherOptions options;
          options.algorithm = algorithm;
          if (in_place) {
            for (std::size_t i = 0; i < count; ++i) recv.set(own + i, value(rank, i));
            comm.all_gather(recv.at(own), recv.data(), count, type, options);
          } else {
            for (std::size_t i = 0; i < count; ++i) send.set(i, value(rank, i));
            comm.all_gather(send.data(), recv.data(), count, type, options);
          }
          ASSERT_TRUE(check_elements(recv, 0, total, rank, [&](std::size_t i) {
            return value(static_cast<int>(i / count), i % count);
          }));
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
          SCOPED_TRACE(describe(algorithm, type, ReduceOp::kSum, count, true) + " root=" +
                       std::to_string(root));
          TypedBuffer buffer(type, count);
          buffer.poison();
          auto value = [&](std::size_t i) { return input_value(ReduceOp::kMax, type, root, i); };
          if (rank == root) {
            for (std::size_t i = 0; i < count; ++i) buffer.set(i, value(i));
          }
          BroadcastOptions options;
          options.algorithm = algorithm;
          options.root = root;
          comm.broadcast(buffer.data(), count, type, options);
          ASSERT_TRUE(check_elements(buffer, 0, count, rank, value));
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
              SCOPED_TRACE(describe(algorithm, type, op, count, in_place) + " root=" +
                           std::to_string(root));
              TypedBuffer send(type, count);
              TypedBuffer recv(type, count);
              recv.poison();
              for (std::size_t i = 0; i < count; ++i) send.set(i, input_value(op, type, rank, i));
              ReduceOptions options;
              options.op = op;
              options.algorithm = algorithm;
              options.root = root;
              const bool use_in_place = in_place && rank == root;
              comm.reduce(send.data(), use_in_place ? send.data() : recv.data(), count, type,
                          options);
              if (rank == root) {
                ASSERT_TRUE(check_elements(use_in_place ? send : recv, 0, count, rank,
                                           [&](std::size_t i) {
                                             return expected_value(op, type, size, i);
                                           }));
              }
            }
          }
        }
      }
    }
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
