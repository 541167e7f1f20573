// MultiWorkerMirroredStrategy under mpirun (1 to 4 ranks), with 1 and 2
// local replicas: replica ids, reductions of every op and dtype across
// workers, packing of batch_reduce, gather with uneven sizes, the cluster
// resolver, mirrored variables and SGD, input sharding by element and by
// file (each element exactly once across all workers' replicas), and the
// errors. Expected values are exact (small integers).
#include <gtest/gtest.h>
#include <mpi.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "collective/communicator.h"
#include "strategies_test_util.h"

namespace collective::distribute {
namespace {

using testing::floats;
using testing::tensor_equals;
using testing::throws_with;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

class MultiWorker : public ::testing::TestWithParam<int> {
 protected:
  int k() const { return GetParam(); }
  int w() const { return world_size(); }
  int n() const { return k() * w(); }
  MultiWorkerMirroredStrategy strategy{CommunicationOptions{},
                                       MirroredStrategy::cpu_devices(GetParam())};
};

TEST_P(MultiWorker, DescribesTheCluster) {
  EXPECT_EQ(strategy.name(), "MultiWorkerMirroredStrategy");
  EXPECT_EQ(strategy.num_replicas_in_sync(), n());
  EXPECT_EQ(strategy.extended().num_workers(), w());
  EXPECT_EQ(strategy.extended().worker_index(), world_rank());
  EXPECT_EQ(strategy.extended().should_checkpoint(), world_rank() == 0);
  EXPECT_EQ(strategy.extended().worker_devices().front(),
            "/job:worker/replica:0/task:" + std::to_string(world_rank()) + "/device:CPU:0");
  EXPECT_EQ(strategy.extended().cross_device_ops().name(), "CollectiveAllReduce");
  const ClusterResolver* resolver = strategy.cluster_resolver();
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->task_type(), "worker");
  EXPECT_EQ(resolver->task_id(), world_rank());
  EXPECT_EQ(resolver->cluster_spec().num_tasks("worker"), w());
  EXPECT_EQ(resolver->cluster_spec().num_tasks("ps"), 0);
  const auto* mpi = dynamic_cast<const MPIClusterResolver*>(resolver);
  ASSERT_NE(mpi, nullptr);
  EXPECT_EQ(mpi->is_chief(), world_rank() == 0);
  EXPECT_EQ(mpi->num_workers(), w());
  EXPECT_GE(mpi->num_nodes(), 1);
  EXPECT_LT(mpi->local_rank(), mpi->local_size());
  if (const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) {
    EXPECT_EQ(mpi->local_rank(), std::atoi(local));
  }
  if (const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) {
    EXPECT_EQ(mpi->local_size(), std::atoi(local_size));
  }
}

TEST_P(MultiWorker, ReplicaIdsCoverEveryReplicaOnce) {
  const PerReplica<Tensor> ids = strategy.run([] {
    return Tensor(std::vector<std::int32_t>{get_replica_context()->replica_id_in_sync_group()},
                  {1});
  });
  std::vector<double> want;
  for (int i = 0; i < n(); ++i) want.push_back(i);
  EXPECT_TRUE(tensor_equals(strategy.gather(ids, 0), DataType::kInt32, {n()}, want));
}

// Replica g's value at index i, small integers so every op is exact.
double value(ReduceOp op, int g, int i) {
  if (op == ReduceOp::kProd) return (g + i) % 2 == 0 ? 1 : -1;
  return (g * 3 + i * 5) % 13 - 6;
}

TEST_P(MultiWorker, ReduceEveryOpAndDtypeAcrossWorkers) {
  const int count = 37;
  for (int type = 0; type < kNumDataTypes; ++type) {
    const auto dtype = static_cast<DataType>(type);
    for (int o = 0; o < kNumReduceOps; ++o) {
      const auto op = static_cast<ReduceOp>(o);
      if (dtype == DataType::kUInt8) continue;  // negative inputs; uint8 is swept in the unit test
      std::vector<Tensor> locals;
      for (int r = 0; r < k(); ++r) {
        std::vector<double> v(count);
        for (int i = 0; i < count; ++i)
          v[static_cast<std::size_t>(i)] = value(op, world_rank() * k() + r, i);
        locals.push_back(Tensor::from_doubles(dtype, v, {count}));
      }
      std::vector<double> want(count);
      for (int i = 0; i < count; ++i) {
        double acc = value(op, 0, i);
        for (int g = 1; g < n(); ++g) {
          const double x = value(op, g, i);
          if (op == ReduceOp::kSum || op == ReduceOp::kMean) acc += x;
          if (op == ReduceOp::kProd) acc *= x;
          if (op == ReduceOp::kMin) acc = std::min(acc, x);
          if (op == ReduceOp::kMax) acc = std::max(acc, x);
          const auto a = static_cast<std::int64_t>(acc);
          const auto b = static_cast<std::int64_t>(x);
          if (op == ReduceOp::kBitwiseAnd) acc = static_cast<double>(a & b);
          if (op == ReduceOp::kBitwiseOr) acc = static_cast<double>(a | b);
          if (op == ReduceOp::kBitwiseXor) acc = static_cast<double>(a ^ b);
        }
        if (op == ReduceOp::kMean) {
          const bool integer =
              dtype == DataType::kInt8 || dtype == DataType::kInt32 || dtype == DataType::kInt64;
          acc = integer ? std::trunc(acc / n()) : acc / n();
          acc = Tensor::from_doubles(
                    dtype == DataType::kFloat64 || integer ? DataType::kFloat64 : dtype, {acc}, {1})
                    .to_doubles()[0];
        }
        want[static_cast<std::size_t>(i)] = acc;
      }
      if (!op_applies_to(op, dtype)) {
        // Refused on every worker alike, before any communication.
        EXPECT_THROW(strategy.reduce(op, PerReplica<Tensor>(locals)), InvalidArgumentError)
            << to_string(op) << " " << to_string(dtype);
        continue;
      }
      const Tensor result = strategy.reduce(op, PerReplica<Tensor>(locals));
      ASSERT_TRUE(tensor_equals(result, dtype, {count}, want,
                                std::string(to_string(op)) + " " + std::string(to_string(dtype))));
    }
  }
}

TEST_P(MultiWorker, ReplicaAllReduceAndMeanAlongAxis) {
  const PerReplica<Tensor> sums = strategy.run([] {
    const float id = static_cast<float>(get_replica_context()->replica_id_in_sync_group());
    return get_replica_context()->all_reduce(ReduceOp::kSum, floats({id, 1}));
  });
  const double ids = n() * (n() - 1) / 2.0;
  for (const Tensor& t : sums.values())
    EXPECT_TRUE(tensor_equals(t, DataType::kFloat32, {2}, {ids, double(n())}));
  // Replica g holds g + 1 rows of value g: the mean along axis 0 weighs rows.
  const PerReplica<Tensor> rows = strategy.run([] {
    const int id = get_replica_context()->replica_id_in_sync_group();
    return Tensor::from_doubles(
        DataType::kFloat64, std::vector<double>(static_cast<std::size_t>(id + 1), id), {id + 1});
  });
  double total = 0, weighted = 0;
  for (int g = 0; g < n(); ++g) {
    total += g + 1;
    weighted += g * (g + 1.0);
  }
  EXPECT_TRUE(tensor_equals(strategy.reduce(ReduceOp::kMean, rows, 0), DataType::kFloat64, {},
                            {weighted / total}));
}

TEST_P(MultiWorker, GatherWithUnevenSizesAcrossWorkers) {
  // Replica g contributes a [2, g % 3] block of value g along axis 1 (some empty).
  const PerReplica<Tensor> blocks = strategy.run([] {
    const int id = get_replica_context()->replica_id_in_sync_group();
    const int width = id % 3;
    return Tensor::from_doubles(
        DataType::kInt64, std::vector<double>(static_cast<std::size_t>(2 * width), id), {2, width});
  });
  std::vector<double> want;
  for (int row = 0; row < 2; ++row) {
    for (int g = 0; g < n(); ++g)
      for (int c = 0; c < g % 3; ++c) want.push_back(g);
  }
  const Tensor gathered = strategy.gather(blocks, 1);
  EXPECT_TRUE(tensor_equals(gathered, DataType::kInt64,
                            {2, static_cast<std::int64_t>(want.size() / 2)}, want));
}

TEST_P(MultiWorker, MirroredVariablesAndSgdAcrossWorkers) {
  auto scope = strategy.scope();
  Variable w(floats({0, 0}), {.name = "w"});
  Variable counter(floats({0}), {.name = "counter", .aggregation = VariableAggregation::kSum});
  SGD sgd(0.25);
  for (int step = 0; step < 2; ++step) {
    strategy.run([&] {
      const float id = static_cast<float>(get_replica_context()->replica_id_in_sync_group());
      sgd.apply_gradients({{floats({id, 4}), w}});
      counter.assign_add(floats({1}));
    });
  }
  const double ids = n() * (n() - 1) / 2.0;
  for (const Tensor& copy : w.local_values()) {
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {2}, {-0.5 * ids, -2.0 * n()}));
  }
  for (const Tensor& copy : counter.local_values()) {
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {1}, {2.0 * n()}));
  }
}

TEST_P(MultiWorker, BatchReducePacksByBytesPerPack) {
  // 12 float32 tensors of 4 elements (16 bytes): packs of 48 bytes hold 3.
  CommunicationOptions options;
  options.bytes_per_pack = 48;
  options.implementation = CommunicationImplementation::kRing;
  MultiWorkerMirroredStrategy packed(options, MirroredStrategy::cpu_devices(k()));
  std::vector<PerReplica<Tensor>> values;
  for (int t = 0; t < 12; ++t) {
    std::vector<Tensor> locals;
    for (int r = 0; r < k(); ++r) {
      locals.push_back(floats({float(t), float(world_rank() * k() + r), 1, -1}));
    }
    values.emplace_back(std::move(locals));
  }
  const std::uint64_t before = packed.extended().cross_device_ops().packs_reduced();
  const std::vector<Tensor> results = packed.extended().batch_reduce_to(ReduceOp::kSum, values);
  EXPECT_EQ(packed.extended().cross_device_ops().packs_reduced() - before, 4u);
  const double ids = n() * (n() - 1) / 2.0;
  for (int t = 0; t < 12; ++t) {
    EXPECT_TRUE(tensor_equals(results[static_cast<std::size_t>(t)], DataType::kFloat32, {4},
                              {double(t) * n(), ids, double(n()), -double(n())},
                              "tensor " + std::to_string(t)));
  }
  // bytes_per_pack 0 (64 KiB packs): one pack for all 192 bytes.
  const std::uint64_t before_all = strategy.extended().cross_device_ops().packs_reduced();
  strategy.extended().batch_reduce_to(ReduceOp::kSum, values);
  EXPECT_EQ(strategy.extended().cross_device_ops().packs_reduced() - before_all, 1u);
}

TEST_P(MultiWorker, BatchReduceByDefaultPacksOnlySmallTensors) {
  // bytes_per_pack 0: tensors of up to 4 KiB in packs of up to 64 KiB; a
  // larger tensor goes alone. Sizes in float32 elements (4 KiB = 1024):
  // 4, 4 | 25000 | 1024 x 16 (64 KiB) | 1024, 4 | 1025 | 2.
  std::vector<std::size_t> sizes{4, 4, 25000};
  for (int i = 0; i < 17; ++i) sizes.push_back(1024);
  for (std::size_t size : {4, 1025, 2}) sizes.push_back(size);
  std::vector<PerReplica<Tensor>> values;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    std::vector<Tensor> locals;
    for (int r = 0; r < k(); ++r) {
      std::vector<float> v(sizes[t]);
      for (std::size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<float>((i + 7 * t) % 97) + static_cast<float>(world_rank() * k() + r);
      }
      locals.push_back(floats(std::move(v)));
    }
    values.emplace_back(std::move(locals));
  }
  const std::uint64_t before = strategy.extended().cross_device_ops().packs_reduced();
  const std::vector<Tensor> results = strategy.extended().batch_reduce_to(ReduceOp::kSum, values);
  EXPECT_EQ(strategy.extended().cross_device_ops().packs_reduced() - before, 6u);
  const double ids = n() * (n() - 1) / 2.0;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    std::vector<double> expected(sizes[t]);
    for (std::size_t i = 0; i < sizes[t]; ++i) expected[i] = double((i + 7 * t) % 97) * n() + ids;
    EXPECT_TRUE(tensor_equals(results[t], DataType::kFloat32, {static_cast<std::int64_t>(sizes[t])},
                              expected, "tensor " + std::to_string(t)));
  }
}

// Every pack's cross-worker all-reduce is started while the next pack is
// packed and waited for at the end, in order (docs/strategies.md, "Packs in
// flight"): 12 float32 tensors of 4 elements in packs of 3, a tensor of
// 3000 alone, and 5 int64 tensors of 2 elements (16 bytes) in 2 packs;
// exact results for SUM, MAX and MEAN.
TEST_P(MultiWorker, BatchReduceKeepsEveryPackInFlight) {
  CommunicationOptions options;
  options.bytes_per_pack = 48;
  MultiWorkerMirroredStrategy packed(options, MirroredStrategy::cpu_devices(k()));
  const int me = world_rank();
  std::vector<PerReplica<Tensor>> values;
  for (int t = 0; t < 12; ++t) {
    std::vector<Tensor> locals;
    for (int r = 0; r < k(); ++r) {
      locals.push_back(floats({float(t), float(me * k() + r), 2, float(-t)}));
    }
    values.emplace_back(std::move(locals));
  }
  {
    std::vector<Tensor> locals;
    for (int r = 0; r < k(); ++r) {
      std::vector<float> v(3000);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i % 101) + float(me * k() + r);
      locals.push_back(floats(std::move(v)));
    }
    values.emplace_back(std::move(locals));
  }
  for (int t = 0; t < 5; ++t) {
    std::vector<Tensor> locals;
    for (int r = 0; r < k(); ++r) {
      locals.push_back(Tensor(
          std::vector<std::int64_t>{std::int64_t{1} << 40, (me * k() + r) * 2 + t}, Shape{2}));
    }
    values.emplace_back(std::move(locals));
  }
  const double ids = n() * (n() - 1) / 2.0;
  const double last = n() - 1;
  for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMean}) {
    const std::string what = "rank " + std::to_string(me) + ", " + std::string(to_string(op));
    const std::uint64_t before = packed.extended().cross_device_ops().packs_reduced();
    const std::vector<Tensor> results = packed.extended().batch_reduce_to(op, values);
    // float32: 4 packs of 3 tensors + the large one; int64: packs of 3 and 2.
    EXPECT_EQ(packed.extended().cross_device_ops().packs_reduced() - before, 7u) << what;
    ASSERT_EQ(results.size(), values.size()) << what;
    for (int t = 0; t < 12; ++t) {
      std::vector<double> expected;
      if (op == ReduceOp::kSum) {
        expected = {double(t) * n(), ids, 2.0 * n(), -double(t) * n()};
      } else if (op == ReduceOp::kMax) {
        expected = {double(t), last, 2, -double(t)};
      } else {
        expected = {double(t), ids / n(), 2, -double(t)};
      }
      EXPECT_TRUE(tensor_equals(results[static_cast<std::size_t>(t)], DataType::kFloat32, {4},
                                expected, what + ", tensor " + std::to_string(t)));
    }
    std::vector<double> large(3000);
    for (std::size_t i = 0; i < large.size(); ++i) {
      const double base = double(i % 101);
      large[i] = op == ReduceOp::kSum   ? base * n() + ids
                 : op == ReduceOp::kMax ? base + last
                                        : base + ids / n();
    }
    EXPECT_TRUE(
        tensor_equals(results[12], DataType::kFloat32, {3000}, large, what + ", tensor 12"));
    for (int t = 0; t < 5; ++t) {
      // Replica g holds {2^40, 2g + t}.
      const double big = double(std::int64_t{1} << 40);
      std::vector<double> expected;
      if (op == ReduceOp::kSum) {
        expected = {big * n(), 2 * ids + double(t) * n()};
      } else if (op == ReduceOp::kMax) {
        expected = {big, 2 * last + t};
      } else {  // integer MEAN: the sum divided, truncated
        expected = {big, double((std::int64_t(2 * ids) + std::int64_t(t) * n()) / n())};
      }
      EXPECT_TRUE(tensor_equals(results[static_cast<std::size_t>(13 + t)], DataType::kInt64, {2},
                                expected, what + ", int64 tensor " + std::to_string(t)));
    }
  }
  // With several workers all 5 float32 packs were in flight at once (one
  // worker makes no cross-worker call).
  EXPECT_EQ(packed.extended().cross_device_ops().most_packs_in_flight(), w() > 1 ? 5u : 0u)
      << "rank " << me;
}

// A pack whose call fails in flight (worker 0's second tensor has 5
// elements, the others' 4: the cross-rank check refuses it) raises
// MismatchError from batch_reduce on every worker, as the blocking call
// did, after every pack in flight finished; the next batch reduces exactly.
TEST_P(MultiWorker, APackThatFailsInFlightRaisesOnEveryWorker) {
  if (w() == 1) GTEST_SKIP() << "needs two workers";
  CommunicationOptions options;
  options.bytes_per_pack = 16;  // a pack per tensor
  MultiWorkerMirroredStrategy packed(options, MirroredStrategy::cpu_devices(k()));
  const int me = world_rank();
  const auto batch = [&](bool uneven) {
    std::vector<PerReplica<Tensor>> values;
    for (int t = 0; t < 4; ++t) {
      std::vector<Tensor> locals;
      const std::size_t size = uneven && t == 1 && me == 0 ? 5 : 4;
      for (int r = 0; r < k(); ++r)
        locals.push_back(floats(std::vector<float>(size, float(t + 1))));
      values.emplace_back(std::move(locals));
    }
    return values;
  };
  std::optional<std::string> error;
  try {
    packed.extended().batch_reduce_to(ReduceOp::kSum, batch(true));
  } catch (const MismatchError& mismatch) {
    error = mismatch.what();
  }
  ASSERT_TRUE(error.has_value()) << "rank " << me << ": no MismatchError";
  // The blocking call's text: the failing pack named, every worker in it.
  const std::string expected = "(rank " + std::to_string(me) +
                               "): the workers made different cross-worker calls: workers 0-" +
                               std::to_string(w() - 1) +
                               ": before the first step, cross-worker call 2: "
                               "StrategyExtended.batch_reduce_to. Nothing was reduced (the ranks "
                               "disagree on this call: rank 0 count=5";
  EXPECT_NE(error->find(expected), std::string::npos)
      << "rank " << me << ": expected an error containing \"" << expected << "\", got \"" << *error
      << "\"";
  const std::vector<Tensor> results =
      packed.extended().batch_reduce_to(ReduceOp::kSum, batch(false));
  for (int t = 0; t < 4; ++t) {
    EXPECT_TRUE(tensor_equals(results[static_cast<std::size_t>(t)], DataType::kFloat32, {4},
                              std::vector<double>(4, double(t + 1) * n()),
                              "rank " + std::to_string(me) + ", tensor " + std::to_string(t)));
  }
}

// CommunicationOptions::deterministic: random values (whose sums round),
// the result bitwise the reduction over global replicas 0..n-1 in order,
// which no layout of n replicas (workers x local replicas) can change.
float replica_value(int replica, std::size_t index) {
  std::uint64_t x = static_cast<std::uint64_t>(replica) * 0x9E3779B97F4A7C15ull +
                    index * 0xBF58476D1CE4E5B9ull + 1;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return static_cast<float>(static_cast<double>(x >> 11) * 0x1.0p-53 * 3.0 - 1.5);
}

TEST_P(MultiWorker, DeterministicReductionIsTheSameForEveryLayout) {
  CommunicationOptions options;
  options.deterministic = true;
  MultiWorkerMirroredStrategy ordered(options, MirroredStrategy::cpu_devices(k()));
  const std::size_t sizes[] = {7, 1000};
  for (DataType type : {DataType::kFloat32, DataType::kBFloat16}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
      std::vector<PerReplica<Tensor>> values;
      for (std::size_t size : sizes) {
        std::vector<Tensor> locals;
        for (int r = 0; r < k(); ++r) {
          std::vector<double> v(size);
          for (std::size_t i = 0; i < size; ++i) v[i] = replica_value(world_rank() * k() + r, i);
          locals.push_back(Tensor::from_doubles(type, v, {static_cast<std::int64_t>(size)}));
        }
        values.emplace_back(std::move(locals));
      }
      const std::vector<Tensor> results = ordered.extended().batch_reduce_to(op, values);
      for (std::size_t t = 0; t < values.size(); ++t) {
        // The reference: ((x0 + x1) + x2) ..., float32 arithmetic, rounded
        // to the type once; MEAN divides the float32 sum before that one
        // rounding (as the library's deterministic reductions do).
        const Tensor& got = results[t];
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < sizes[t]; ++i) {
          auto rounded = [&](float value) { return Tensor::from_doubles(type, {value}, {1}); };
          auto as_float = [&](const Tensor& one, std::size_t at) {
            return static_cast<float>(one.to_doubles()[at]);
          };
          float sum = as_float(rounded(replica_value(0, i)), 0);
          for (int g = 1; g < n(); ++g) sum += as_float(rounded(replica_value(g, i)), 0);
          const Tensor want = rounded(op == ReduceOp::kMean ? sum / static_cast<float>(n()) : sum);
          const std::size_t element = element_size(type);
          if (std::memcmp(static_cast<const std::byte*>(got.raw_data()) + i * element,
                          want.raw_data(), element) != 0 &&
              ++wrong <= 3) {
            ADD_FAILURE() << to_string(type) << " " << to_string(op) << " tensor " << t << ": rank "
                          << world_rank() << " index " << i << " expected " << as_float(want, 0)
                          << " actual " << got.to_doubles()[i];
          }
        }
      }
    }
  }
}

// One enum for the choice in the whole library; the guide's constructor
// form; NCCL forced on the layer's host tensors raises (no silent ring).
static_assert(std::is_same_v<CommunicationImplementation, collective::CollectiveCommunication>);
static_assert(std::is_same_v<CollectiveCommunication, collective::CollectiveCommunication>);

TEST_P(MultiWorker, CollectiveCommunicationFormsAndNcclOnHostTensorsRaises) {
  MultiWorkerMirroredStrategy ring(CollectiveCommunication::kRing,
                                   MirroredStrategy::cpu_devices(k()));
  EXPECT_EQ(ring.extended().communication_options().implementation, CollectiveCommunication::kRing);
  const PerReplica<Tensor> ones = ring.run([] { return floats({1, 2}); });
  EXPECT_TRUE(tensor_equals(ring.reduce(ReduceOp::kSum, ones), DataType::kFloat32, {2},
                            {double(n()), 2.0 * n()}));
  EXPECT_TRUE(throws_with<UnsupportedError>(
      [&] {
        MultiWorkerMirroredStrategy(CollectiveCommunication::kNccl,
                                    MirroredStrategy::cpu_devices(k()));
      },
      "NCCL serves device buffers only"));
  CommunicationOptions options;
  options.implementation = CommunicationImplementation::kNccl;
  EXPECT_TRUE(throws_with<UnsupportedError>(
      [&] { MultiWorkerMirroredStrategy(options, MirroredStrategy::cpu_devices(k())); },
      "MultiWorkerMirroredStrategy"));
}

// tf.distribute broadcasts the chief's initial value: a rank-dependent
// initializer still gives every copy on every worker worker 0's value, for
// variables made in the cross-replica context and inside run().
TEST_P(MultiWorker, VariablesStartFromTheChiefsInitialValue) {
  auto scope = strategy.scope();
  const float rank = static_cast<float>(world_rank());
  Variable v(floats({rank + 1, 10 * rank, -rank}), {.name = "v"});
  Variable empty(Tensor(DataType::kInt64, {0, 3}), {.name = "empty"});
  EXPECT_EQ(v.num_copies(), static_cast<std::size_t>(k()));
  for (const Tensor& copy : v.local_values())
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {3}, {1, 0, 0}));
  EXPECT_TRUE(tensor_equals(empty.value(), DataType::kInt64, {0, 3}, {}));
  const PerReplica<Tensor> made = strategy.run([&] {
    const int id = get_replica_context()->replica_id_in_sync_group();
    Variable inside(Tensor(std::vector<std::int32_t>{id, 7}, {2}), {.name = "inside"});
    return inside.value();
  });
  // Local replica 0's initial value of worker 0: replica id 0.
  for (const Tensor& value : made.values())
    EXPECT_TRUE(tensor_equals(value, DataType::kInt32, {2}, {0, 7}));
  if (w() > 1) {
    // Workers that disagree on the shape all raise, none waits.
    EXPECT_TRUE(throws_with<MismatchError>(
        [&] {
          Variable bad(Tensor(DataType::kFloat32, {world_rank() == 0 ? 2 : 3}), {.name = "bad"});
        },
        "variable 'bad'"));
  }
}

// Sync-on-read across workers: replicas accumulate alone; the
// cross-replica read (collective) reduces over every worker's replicas.
TEST_P(MultiWorker, SyncOnReadVariablesReduceAcrossWorkersWhenRead) {
  auto scope = strategy.scope();
  SyncOnReadVariable count(Tensor::scalar<std::int64_t>(0),
                           {.name = "count", .aggregation = VariableAggregation::kSum});
  SyncOnReadVariable mean(floats({0}), {.name = "mean", .aggregation = VariableAggregation::kMean});
  for (int step = 0; step < 3; ++step) {
    strategy.run([&] {
      const int id = get_replica_context()->replica_id_in_sync_group();
      count.assign_add(Tensor::scalar<std::int64_t>(id + 1));
      mean.assign_add(floats({static_cast<float>(2 * id)}));
    });
  }
  const double ids = n() * (n() - 1) / 2.0;
  EXPECT_TRUE(tensor_equals(count.value(), DataType::kInt64, {}, {3 * (ids + n())}));
  EXPECT_TRUE(tensor_equals(mean.value(), DataType::kFloat32, {1}, {6 * ids / n()}));
  const std::vector<Tensor> own = count.local_values();
  for (int r = 0; r < k(); ++r) {
    EXPECT_TRUE(tensor_equals(own[static_cast<std::size_t>(r)], DataType::kInt64, {},
                              {3.0 * (world_rank() * k() + r + 1)},
                              "local replica " + std::to_string(r)));
  }
}

// ONLY_FIRST_REPLICA takes each worker's own local replica 0 value (TF's
// experimental_local_results(value)[0]), with no cross-worker step.
TEST_P(MultiWorker, OnlyFirstReplicaIsEachWorkersFirstLocalReplica) {
  auto scope = strategy.scope();
  Variable first(floats({0}),
                 {.name = "first", .aggregation = VariableAggregation::kOnlyFirstReplica});
  strategy.run([&] {
    const float id = static_cast<float>(get_replica_context()->replica_id_in_sync_group());
    first.assign_add(floats({id + 1}));
  });
  for (const Tensor& copy : first.local_values()) {
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {1}, {double(world_rank() * k() + 1)}));
  }
}

// Every element exactly once across all replicas of all workers: each
// replica counts what it saw, and the counts are summed over everyone.
void expect_each_once(Strategy& strategy, const DistributedDataset& data, std::int64_t elements,
                      const std::string& what) {
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::int64_t> counts(static_cast<std::size_t>(elements), 0);
    for (const PerReplica<Element>& batch : data) {
      const PerReplica<Tensor> seen = strategy.run(
          [&](const Element& slice) {
            Tensor histogram(DataType::kInt64, {elements});
            for (std::int64_t id : slice[0].values<std::int64_t>())
              histogram.values<std::int64_t>()[static_cast<std::size_t>(id)]++;
            return histogram;
          },
          batch);
      const Tensor total = strategy.reduce(ReduceOp::kSum, seen);
      for (std::int64_t i = 0; i < elements; ++i)
        counts[static_cast<std::size_t>(i)] +=
            total.values<std::int64_t>()[static_cast<std::size_t>(i)];
    }
    for (std::int64_t i = 0; i < elements; ++i) {
      ASSERT_EQ(counts[static_cast<std::size_t>(i)], 1)
          << what << ": element " << i << " epoch " << epoch;
    }
  }
}

TEST_P(MultiWorker, InputShardedByElement) {
  for (std::int64_t global : {1, 5, 8}) {
    const DistributedDataset data =
        strategy.experimental_distribute_dataset(Dataset::range(29).batch(global));
    EXPECT_EQ(data.sharding(), w() == 1 ? InputSharding::kSingleWorker : InputSharding::kByElement);
    // Per-replica sizes: the global split of each global batch.
    DistributedIterator iterator = data.make_iterator();
    const PerReplica<Element> first = iterator.get_next();
    for (int r = 0; r < k(); ++r) {
      const std::int64_t g = world_rank() * k() + r;
      const std::int64_t size = global / n() + (g < global % n() ? 1 : 0);
      EXPECT_EQ(first[static_cast<std::size_t>(r)][0].dim(0), size)
          << "global " << global << " replica " << g;
    }
    expect_each_once(strategy, data, 29, "by element, global " + std::to_string(global));
  }
}

// Files exist on every rank's file system (one host): rank 0 writes them.
class SharedFiles {
 public:
  explicit SharedFiles(const std::vector<std::int64_t>& lines_per_file) {
    std::int64_t next = 0;
    for (std::size_t f = 0; f < lines_per_file.size(); ++f) {
      const std::string path =
          "/tmp/strategies_mw_test_" + std::to_string(getppid()) + "_" + std::to_string(f);
      if (world_rank() == 0) {
        std::ofstream out(path);
        for (std::int64_t i = 0; i < lines_per_file[f]; ++i) out << next++ << "\n";
      }
      paths_.push_back(path);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  ~SharedFiles() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0)
      for (const std::string& path : paths_) std::remove(path.c_str());
  }
  const std::vector<std::string>& paths() const { return paths_; }

 private:
  std::vector<std::string> paths_;
};

Dataset ids_from_files(const std::vector<std::string>& paths) {
  return Dataset::from_files(paths, Dataset::float_line_reader()).map([](Element e) {
    return Element{
        Tensor::scalar<std::int64_t>(static_cast<std::int64_t>(e[0].values<float>()[0]))};
  });
}

TEST_P(MultiWorker, InputShardedByFileWithUnevenFiles) {
  // w + 1 files of different lengths: workers run out at different steps.
  std::vector<std::int64_t> lines;
  std::int64_t total = 0;
  for (int f = 0; f <= w(); ++f) {
    lines.push_back(3 + 4 * f);
    total += lines.back();
  }
  const SharedFiles files(lines);
  const DistributedDataset data =
      strategy.experimental_distribute_dataset(ids_from_files(files.paths()).batch(2 * w()));
  EXPECT_EQ(data.sharding(), w() == 1 ? InputSharding::kSingleWorker : InputSharding::kByFile);
  expect_each_once(strategy, data, total, "by file");
}

TEST_P(MultiWorker, InputFromFunctionPerWorker) {
  const DistributedDataset data =
      strategy.distribute_datasets_from_function([&](const InputContext& context) {
        EXPECT_EQ(context.num_input_pipelines(), w());
        EXPECT_EQ(context.input_pipeline_id(), world_rank());
        EXPECT_EQ(context.num_replicas_in_sync(), n());
        // Worker i keeps elements i, i + w, ...: uneven when w does not divide 31.
        return Dataset::range(31)
            .shard(context.num_input_pipelines(), context.input_pipeline_id())
            .batch(context.get_per_replica_batch_size(2 * n()));
      });
  expect_each_once(strategy, data, 31, "from function");
}

// AutoShardPolicy: kData shards by element (no warning), kFile refuses a
// pipeline without one file per worker, kOff gives every worker every
// element (its replicas take the global batches' parts in turn).
TEST_P(MultiWorker, AutoShardPolicies) {
  InputOptions data_policy;
  data_policy.auto_shard_policy = AutoShardPolicy::kData;
  const DistributedDataset by_element =
      strategy.experimental_distribute_dataset(Dataset::range(13).batch(5), data_policy);
  EXPECT_EQ(by_element.sharding(),
            w() == 1 ? InputSharding::kSingleWorker : InputSharding::kByElement);
  expect_each_once(strategy, by_element, 13, "kData");
  InputOptions file_policy;
  file_policy.auto_shard_policy = AutoShardPolicy::kFile;
  if (w() > 1) {
    EXPECT_TRUE(throws_with<InvalidArgumentError>(
        [&] { strategy.experimental_distribute_dataset(Dataset::range(13).batch(5), file_policy); },
        "AutoShardPolicy::kFile needs a pipeline that reads at least one file per worker"));
  }
  InputOptions off;
  off.auto_shard_policy = AutoShardPolicy::kOff;
  const DistributedDataset everything =
      strategy.experimental_distribute_dataset(Dataset::range(13).batch(5).prefetch(1), off);
  EXPECT_EQ(everything.sharding(), w() == 1 ? InputSharding::kSingleWorker : InputSharding::kOff);
  std::vector<int> seen(13, 0);
  int steps = 0;
  std::int64_t part = 0;  // index of the next part of the global batch
  for (const PerReplica<Element>& step : everything) {
    for (int r = 0; r < k(); ++r) {
      const Tensor& ids = step[static_cast<std::size_t>(r)][0];
      // Global batch b (5, 5, 3 rows) is cut into n() parts; with one
      // worker each step covers one global batch, else parts go in turn.
      const std::int64_t p = w() == 1 ? r : (part++ % n());
      const std::int64_t batch = w() == 1 ? steps : (part - 1) / n();
      const std::int64_t rows = batch == 2 ? 3 : 5;
      EXPECT_EQ(ids.dim(0), rows / n() + (p < rows % n() ? 1 : 0))
          << "step " << steps << " replica " << r;
      for (std::int64_t id : ids.values<std::int64_t>()) ++seen[static_cast<std::size_t>(id)];
    }
    ++steps;
  }
  EXPECT_EQ(steps, 3 * w());
  for (int i = 0; i < 13; ++i)
    EXPECT_EQ(seen[static_cast<std::size_t>(i)], 1)
        << "element " << i << " on worker " << world_rank();
}

// kPerReplica: one pipeline per replica of the sync group; replicas whose
// data ended get empty batches until every replica of every worker is done.
TEST_P(MultiWorker, InputFromFunctionPerReplica) {
  InputOptions options;
  options.experimental_replication_mode = InputReplicationMode::kPerReplica;
  const DistributedDataset data = strategy.distribute_datasets_from_function(
      [&](const InputContext& context) {
        EXPECT_EQ(context.num_input_pipelines(), n());
        const std::int64_t g = context.input_pipeline_id();
        return Dataset::range(100 * g, 100 * g + 1 + g).batch(1);  // replica g: g + 1 batches
      },
      options);
  int steps = 0;
  for (const PerReplica<Element>& step : data) {
    for (int r = 0; r < k(); ++r) {
      const std::int64_t g = world_rank() * k() + r;
      const Tensor& ids = step[static_cast<std::size_t>(r)][0];
      if (steps <= g) {
        ASSERT_EQ(ids.dim(0), 1) << "replica " << g << " step " << steps;
        EXPECT_EQ(ids.values<std::int64_t>()[0], 100 * g + steps);
      } else {
        EXPECT_EQ(ids.dim(0), 0) << "replica " << g << " step " << steps;
      }
    }
    ++steps;
  }
  EXPECT_EQ(steps, n());
}

TEST_P(MultiWorker, ValuesFromFunctionKnowTheirReplicaIds) {
  const PerReplica<std::int32_t> ids =
      strategy.experimental_distribute_values_from_function([&](const ValueContext& context) {
        EXPECT_EQ(context.num_replicas_in_sync(), n());
        return context.replica_id_in_sync_group();
      });
  const PerReplica<std::int32_t> in_run = strategy.run(
      [](std::int32_t id) {
        EXPECT_EQ(id, get_replica_context()->replica_id_in_sync_group());
        return id;
      },
      ids);
  for (int r = 0; r < k(); ++r)
    EXPECT_EQ(in_run[static_cast<std::size_t>(r)], world_rank() * k() + r);
}

// A strategy destroyed while another thread is inside its run(): the run's
// waits end at once with an error saying so, the destructor returns once
// run() has returned, and nothing hangs (the replica threads once waited
// forever for a job the stopping threads never took). Every worker does
// the same, so none waits for a peer that left.
TEST_P(MultiWorker, DestroyedWhileAnotherThreadIsInsideRun) {
  auto owned = std::make_unique<MultiWorkerMirroredStrategy>(CommunicationOptions{},
                                                             MirroredStrategy::cpu_devices(k()));
  std::atomic<bool> inside{false};
  std::atomic<int> reductions{0};
  std::string error;
  std::thread runner([&] {
    try {
      owned->run([&] {
        ReplicaContext& context = *get_replica_context();
        inside = true;
        // Collectives until the destruction ends them (bounded, in case it
        // never does: the test then fails below instead of hanging).
        for (int i = 0; i < 200000; ++i) {
          const Tensor sum = context.all_reduce(ReduceOp::kSum, floats({1}));
          if (sum.values<float>()[0] != static_cast<float>(n())) {
            throw std::logic_error("wrong sum " + std::to_string(sum.values<float>()[0]));
          }
          if (context.local_replica_id() == 0) ++reductions;
        }
      });
      error = "run() returned normally";
    } catch (const CommunicationError& failure) {
      error = failure.what();
    } catch (const std::exception& failure) {
      error = std::string("another error: ") + failure.what();
    }
  });
  while (!inside) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  while (reductions < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  owned.reset();  // returns only once run() has returned
  runner.join();
  EXPECT_NE(error.find("was destroyed while run() was in progress on another thread"),
            std::string::npos)
      << "rank " << world_rank() << ": " << error;
}

INSTANTIATE_TEST_SUITE_P(LocalReplicas, MultiWorker, ::testing::Values(1, 2),
                         [](const auto& info) { return "k" + std::to_string(info.param); });

TEST(MultiWorkerErrors, WorkersWithDifferentReplicaCounts) {
  if (world_size() == 1) GTEST_SKIP() << "needs two workers";
  const int local = world_rank() == 0 ? 2 : 1;
  EXPECT_TRUE(throws_with<MismatchError>(
      [&] { MultiWorkerMirroredStrategy({}, MirroredStrategy::cpu_devices(local)); },
      "different numbers of local replicas"));
}

TEST(MultiWorkerErrors, AReplicaThatNeverArrivesTimesOut) {
  CommunicationOptions options;
  options.timeout_seconds = 0.5;
  MultiWorkerMirroredStrategy strategy(options, MirroredStrategy::cpu_devices(2));
  // Local replica 1 is late by far more than the timeout; replica 0 reports
  // which replica it waited for, and run() returns with that error.
  EXPECT_TRUE(throws_with<TimeoutError>(
      [&] {
        strategy.run([] {
          ReplicaContext& context = *get_replica_context();
          if (context.local_replica_id() == 1)
            std::this_thread::sleep_for(std::chrono::milliseconds(1500));
          context.all_reduce(ReduceOp::kSum, floats({1}));
        });
      },
      "for local replicas 1 to make the same call"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] {
        CommunicationOptions bad;
        bad.timeout_seconds = -1;
        MultiWorkerMirroredStrategy({bad});
      },
      "timeout_seconds must be positive"));
}

// timeout_seconds beyond what milliseconds can count (1e300) once became a
// negative timeout; it now means "no deadline" (kLongestTimeout).
TEST(MultiWorkerErrors, TimeoutTooLongForTheClockMeansNoDeadline) {
  CommunicationOptions options;
  options.timeout_seconds = 1e300;
  MultiWorkerMirroredStrategy strategy(options, MirroredStrategy::cpu_devices(2));
  EXPECT_EQ(effective_timeout(options), kLongestTimeout);
  const PerReplica<Tensor> sums = strategy.run([] {
    ReplicaContext& context = *get_replica_context();
    if (context.local_replica_id() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return context.all_reduce(ReduceOp::kSum, floats({1, 2}));
  });
  const double replicas = 2.0 * world_size();
  for (const Tensor& sum : sums.values()) {
    EXPECT_TRUE(tensor_equals(sum, DataType::kFloat32, {2}, {replicas, 2 * replicas}));
  }
}

}  // namespace
}  // namespace collective::distribute
