// Cross-device ops: every op, dtype, replica count and size reduces to the
// exact value (inputs whose reductions are exactly representable); each
// implementation sums in its documented order; batch_reduce packs as
// documented; bad input is rejected before anything is reduced.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include "strategies_test_util.h"

namespace collective::distribute {
namespace {

using testing::tensor_equals;
using testing::throws_with;

std::unique_ptr<CrossDeviceOps> make_ops(const std::string& name, int num_packs = 1) {
  if (name == "ReductionToOneDevice") return std::make_unique<ReductionToOneDevice>();
  if (name == "HierarchicalCopyAllReduce")
    return std::make_unique<HierarchicalCopyAllReduce>(num_packs);
  return std::make_unique<NcclAllReduce>(num_packs);
}

const char* const kOps[] = {"ReductionToOneDevice", "HierarchicalCopyAllReduce", "NcclAllReduce"};

// Value of replica r at index i: small integers, so sums, products (of at
// most 4 factors of magnitude <= 3), min and max are exact in every type.
double input(ReduceOp op, DataType dtype, int r, std::size_t i) {
  const bool unsigned_type = dtype == DataType::kUInt8;
  const auto rank = static_cast<std::size_t>(r);
  // Seven-bit patterns: each replica clears one bit (AND) or sets one (OR).
  if (op == ReduceOp::kBitwiseAnd) return 127 & ~(1 << ((i + rank) % 7));
  if (op == ReduceOp::kBitwiseOr) return 1 << ((i * 3 + rank) % 7);
  if (op == ReduceOp::kBitwiseXor) return static_cast<double>((i * 37 + rank * 53) % 128);
  if (op == ReduceOp::kProd) {
    const int v = static_cast<int>((i + static_cast<std::size_t>(r)) % 3) + 1;  // 1..3
    return (!unsigned_type && (i + static_cast<std::size_t>(r)) % 2 == 1) ? -v : v;
  }
  const int v = static_cast<int>((i * 7 + static_cast<std::size_t>(r) * 3) % 11);
  return unsigned_type ? v : v - 5;
}

double expected(ReduceOp op, DataType dtype, int replicas, std::size_t i) {
  double acc = input(op, dtype, 0, i);
  for (int r = 1; r < replicas; ++r) {
    const double v = input(op, dtype, r, i);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean: acc += v; break;
      case ReduceOp::kProd: acc *= v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kBitwiseAnd: acc = static_cast<int>(acc) & static_cast<int>(v); break;
      case ReduceOp::kBitwiseOr: acc = static_cast<int>(acc) | static_cast<int>(v); break;
      case ReduceOp::kBitwiseXor: acc = static_cast<int>(acc) ^ static_cast<int>(v); break;
    }
  }
  if (op == ReduceOp::kMean) {
    const bool floating = dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
                          dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
    acc = floating ? acc / replicas : std::trunc(acc / replicas);
    // float16/bfloat16 round the quotient to their precision.
    if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) {
      acc = Tensor::from_doubles(dtype, {acc}, {1}).to_doubles()[0];
    } else if (dtype == DataType::kFloat32) {
      acc = static_cast<float>(acc);
    }
  }
  return acc;
}

PerReplica<Tensor> make_inputs(ReduceOp op, DataType dtype, int replicas, std::size_t count) {
  std::vector<Tensor> values;
  for (int r = 0; r < replicas; ++r) {
    std::vector<double> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = input(op, dtype, r, i);
    values.push_back(Tensor::from_doubles(dtype, v, {static_cast<std::int64_t>(count)}));
  }
  return PerReplica<Tensor>(std::move(values));
}

TEST(CrossDeviceOps, EveryOpDtypeReplicaCountAndSize) {
  for (const char* name : kOps) {
    auto ops = make_ops(name);
    for (int replicas = 1; replicas <= 4; ++replicas) {
      for (int type = 0; type < kNumDataTypes; ++type) {
        const auto dtype = static_cast<DataType>(type);
        for (int o = 0; o < kNumReduceOps; ++o) {
          const auto op = static_cast<ReduceOp>(o);
          if (!op_applies_to(op, dtype)) {
            EXPECT_THROW(ops->reduce(op, make_inputs(op, dtype, replicas, 5)), InvalidArgumentError)
                << name << " " << to_string(op) << " " << to_string(dtype) << " x" << replicas;
            continue;
          }
          for (std::size_t count : {0, 1, 5, 1023, 2 * 1024 + 3}) {
            const Tensor result = ops->reduce(op, make_inputs(op, dtype, replicas, count));
            std::vector<double> want(count);
            for (std::size_t i = 0; i < count; ++i) want[i] = expected(op, dtype, replicas, i);
            ASSERT_TRUE(tensor_equals(result, dtype, {static_cast<std::int64_t>(count)}, want,
                                      std::string(name) + " " + std::string(to_string(op)) + " " +
                                          std::string(to_string(dtype)) + " x" +
                                          std::to_string(replicas) + " count " +
                                          std::to_string(count)));
          }
        }
      }
    }
  }
}

TEST(CrossDeviceOps, MinMaxPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* name : kOps) {
    auto ops = make_ops(name);
    const PerReplica<Tensor> values(
        {testing::floats({1, nan, 3}), testing::floats({nan, 2, -1}), testing::floats({0, 0, 0})});
    EXPECT_TRUE(tensor_equals(ops->reduce(ReduceOp::kMin, values), DataType::kFloat32, {3},
                              {nan, nan, -1}, name));
    EXPECT_TRUE(tensor_equals(ops->reduce(ReduceOp::kMax, values), DataType::kFloat32, {3},
                              {nan, nan, 3}, name));
  }
}

TEST(CrossDeviceOps, IntegerSumWrapsAround) {
  auto ops = make_ops("ReductionToOneDevice");
  const PerReplica<Tensor> values(
      {Tensor(std::vector<std::int8_t>{120}, {1}), Tensor(std::vector<std::int8_t>{10}, {1})});
  EXPECT_TRUE(tensor_equals(ops->reduce(ReduceOp::kSum, values), DataType::kInt8, {1}, {-126}));
}

// Reference summation orders, in float32 as documented in cross_device_ops.h.
float linear(const std::vector<float>& v) {
  float acc = v[0];
  for (std::size_t r = 1; r < v.size(); ++r) acc += v[r];
  return acc;
}
float tree(std::vector<float> v) {
  for (std::size_t stride = 1; stride < v.size(); stride *= 2) {
    for (std::size_t r = 0; r + stride < v.size(); r += 2 * stride) v[r] += v[r + stride];
  }
  return v[0];
}
float ring(const std::vector<float>& v, std::size_t chunk) {
  const std::size_t k = v.size();
  float acc = v[(chunk + 1) % k];
  for (std::size_t j = 1; j < k; ++j) acc += v[(chunk + 1 + j) % k];
  return acc;
}

TEST(CrossDeviceOps, EachSumsInItsDocumentedOrder) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1e6f, 1e6f);
  for (int replicas = 1; replicas <= 5; ++replicas) {
    const std::size_t count = 997;
    std::vector<std::vector<float>> data(static_cast<std::size_t>(replicas),
                                         std::vector<float>(count));
    std::vector<Tensor> tensors;
    for (auto& row : data) {
      for (float& x : row) x = uniform(random) * (uniform(random) > 0 ? 1e-6f : 1.0f);
      tensors.push_back(testing::floats(row));
    }
    const PerReplica<Tensor> values(tensors);
    const Tensor one = ReductionToOneDevice().reduce(ReduceOp::kSum, values);
    const Tensor hier = HierarchicalCopyAllReduce().reduce(ReduceOp::kSum, values);
    const Tensor nccl = NcclAllReduce().reduce(ReduceOp::kSum, values);
    for (std::size_t i = 0; i < count; ++i) {
      std::vector<float> column;
      for (const auto& row : data) column.push_back(row[i]);
      const std::size_t k = static_cast<std::size_t>(replicas);
      std::size_t chunk = 0;
      while (count * (chunk + 1) / k <= i) ++chunk;
      ASSERT_EQ(one.values<float>()[i], linear(column)) << "x" << replicas << " index " << i;
      ASSERT_EQ(hier.values<float>()[i], tree(column)) << "x" << replicas << " index " << i;
      ASSERT_EQ(nccl.values<float>()[i], ring(column, chunk)) << "x" << replicas << " index " << i;
    }
  }
}

TEST(CrossDeviceOps, Float16AccumulatesInFloat32AndRoundsOnce) {
  // 2048 + 1 + 1: float16 cannot hold 2049, so pairwise rounding would give
  // 2048 (ties to even, twice); accumulating in float32 gives 2050.
  const PerReplica<Tensor> values({Tensor::from_doubles(DataType::kFloat16, {2048}, {1}),
                                   Tensor::from_doubles(DataType::kFloat16, {1}, {1}),
                                   Tensor::from_doubles(DataType::kFloat16, {1}, {1})});
  EXPECT_TRUE(tensor_equals(ReductionToOneDevice().reduce(ReduceOp::kSum, values),
                            DataType::kFloat16, {1}, {2050}));
}

TEST(CrossDeviceOps, BatchReducePacksAsDocumented) {
  // 10 float32 tensors of sizes 0..9 and 3 int32 tensors, on 3 replicas.
  const int replicas = 3;
  std::vector<PerReplica<Tensor>> batch;
  std::vector<std::vector<double>> want;
  for (int t = 0; t < 13; ++t) {
    const bool integer = t >= 10;
    const std::size_t size = integer ? 4 : static_cast<std::size_t>(t);
    std::vector<Tensor> per_replica;
    std::vector<double> sum(size, 0);
    for (int r = 0; r < replicas; ++r) {
      std::vector<double> v(size);
      for (std::size_t i = 0; i < size; ++i) {
        v[i] = t * 100 + r * 10 + static_cast<double>(i);
        sum[i] += v[i];
      }
      per_replica.push_back(Tensor::from_doubles(integer ? DataType::kInt32 : DataType::kFloat32, v,
                                                 {static_cast<std::int64_t>(size)}));
    }
    batch.emplace_back(std::move(per_replica));
    want.push_back(sum);
  }
  struct Case {
    std::string name;
    int num_packs;
    std::uint64_t packs;  // float32 group (45 elements) + int32 group (12)
  };
  for (const Case& c :
       {Case{"ReductionToOneDevice", 1, 9 + 3}, Case{"HierarchicalCopyAllReduce", 1, 2},
        Case{"HierarchicalCopyAllReduce", 4, 8}, Case{"NcclAllReduce", 2, 4}}) {
    auto ops = make_ops(c.name, c.num_packs);
    const std::vector<Tensor> results = ops->batch_reduce(ReduceOp::kSum, batch);
    ASSERT_EQ(results.size(), batch.size());
    for (std::size_t t = 0; t < results.size(); ++t) {
      const DataType dtype = t >= 10 ? DataType::kInt32 : DataType::kFloat32;
      EXPECT_TRUE(tensor_equals(results[t], dtype, {static_cast<std::int64_t>(want[t].size())},
                                want[t], c.name + " tensor " + std::to_string(t)));
    }
    EXPECT_EQ(ops->packs_reduced(), c.packs) << c.name << " num_packs " << c.num_packs;
  }
}

TEST(CrossDeviceOps, MeanDividesOnceByTheNumberOfValues) {
  const PerReplica<Tensor> values(
      {testing::floats({1, 2}), testing::floats({2, 2}), testing::floats({4, 2})});
  EXPECT_TRUE(tensor_equals(HierarchicalCopyAllReduce().reduce(ReduceOp::kMean, values),
                            DataType::kFloat32, {2}, {7.0f / 3.0f, 2}));
}

TEST(CrossDeviceOps, BroadcastCopiesToEveryReplica) {
  const Mirrored<Tensor> copies = ReductionToOneDevice().broadcast(testing::floats({1, 2}), 3);
  ASSERT_EQ(copies.num_replicas(), 3u);
  for (const Tensor& copy : copies.values())
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {2}, {1, 2}));
}

TEST(CrossDeviceOps, RejectsBadInputBeforeReducing) {
  ReductionToOneDevice ops;
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { ops.reduce(ReduceOp::kSum, PerReplica<Tensor>(std::vector<Tensor>{})); },
      "at least one"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        ops.reduce(ReduceOp::kSum,
                   PerReplica<Tensor>({testing::floats({1, 2}), testing::floats({1})}));
      },
      "replica 1 holds Tensor(float32, [1])"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        ops.batch_reduce(ReduceOp::kSum,
                         {PerReplica<Tensor>({testing::floats({1})}),
                          PerReplica<Tensor>({testing::floats({1}), testing::floats({1})})});
      },
      "value 1 has 2 per-replica values"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { ops.reduce(static_cast<ReduceOp>(9), PerReplica<Tensor>({testing::floats({1})})); },
      "unknown ReduceOp"));
  EXPECT_EQ(ops.packs_reduced(), 0u);
  EXPECT_TRUE(throws_with<InvalidArgumentError>([] { HierarchicalCopyAllReduce(0); }, "num_packs"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>([] { NcclAllReduce(-1); }, "num_packs"));
}

}  // namespace
}  // namespace collective::distribute
