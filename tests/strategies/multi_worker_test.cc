// MultiWorkerMirroredStrategy under mpirun (1 to 4 ranks), with 1 and 2
// local replicas: replica ids, reductions of every op and dtype across
// workers, packing of batch_reduce, gather with uneven sizes, the cluster
// resolver, mirrored variables and SGD, input sharding by element and by
// file (each element exactly once across all workers' replicas), and the
// errors. Expected values are exact (small integers).
#include <gtest/gtest.h>
#include <mpi.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

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
  MultiWorkerMirroredStrategy strategy{CommunicationOptions{}, MirroredStrategy::cpu_devices(GetParam())};
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
    return Tensor(std::vector<std::int32_t>{get_replica_context()->replica_id_in_sync_group()}, {1});
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
        for (int i = 0; i < count; ++i) v[static_cast<std::size_t>(i)] = value(op, world_rank() * k() + r, i);
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
        }
        if (op == ReduceOp::kMean) {
          const bool integer = dtype == DataType::kInt8 || dtype == DataType::kInt32 || dtype == DataType::kInt64;
          acc = integer ? std::trunc(acc / n()) : acc / n();
          acc = Tensor::from_doubles(dtype == DataType::kFloat64 || integer ? DataType::kFloat64 : dtype,
                                     {acc}, {1}).to_doubles()[0];
        }
        want[static_cast<std::size_t>(i)] = acc;
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
  for (const Tensor& t : sums.values()) EXPECT_TRUE(tensor_equals(t, DataType::kFloat32, {2}, {ids, double(n())}));
  // Replica g holds g + 1 rows of value g: the mean along axis 0 weighs rows.
  const PerReplica<Tensor> rows = strategy.run([] {
    const int id = get_replica_context()->replica_id_in_sync_group();
    return Tensor::from_doubles(DataType::kFloat64, std::vector<double>(static_cast<std::size_t>(id + 1), id), {id + 1});
  });
  double total = 0, weighted = 0;
  for (int g = 0; g < n(); ++g) {
    total += g + 1;
    weighted += g * (g + 1.0);
  }
  EXPECT_TRUE(tensor_equals(strategy.reduce(ReduceOp::kMean, rows, 0), DataType::kFloat64, {}, {weighted / total}));
}

TEST_P(MultiWorker, GatherWithUnevenSizesAcrossWorkers) {
  // Replica g contributes a [2, g % 3] block of value g along axis 1 (some empty).
  const PerReplica<Tensor> blocks = strategy.run([] {
    const int id = get_replica_context()->replica_id_in_sync_group();
    const int width = id % 3;
    return Tensor::from_doubles(DataType::kInt64, std::vector<double>(static_cast<std::size_t>(2 * width), id), {2, width});
  });
  std::vector<double> want;
  for (int row = 0; row < 2; ++row) {
    for (int g = 0; g < n(); ++g) for (int c = 0; c < g % 3; ++c) want.push_back(g);
  }
  const Tensor gathered = strategy.gather(blocks, 1);
  EXPECT_TRUE(tensor_equals(gathered, DataType::kInt64, {2, static_cast<std::int64_t>(want.size() / 2)}, want));
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
                              {double(t) * n(), ids, double(n()), -double(n())}, "tensor " + std::to_string(t)));
  }
  // bytes_per_pack 0: one pack for all of them.
  const std::uint64_t before_all = strategy.extended().cross_device_ops().packs_reduced();
  strategy.extended().batch_reduce_to(ReduceOp::kSum, values);
  EXPECT_EQ(strategy.extended().cross_device_ops().packs_reduced() - before_all, 1u);
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
        // to the type once; MEAN divides that sum, rounded again.
        const Tensor& got = results[t];
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < sizes[t]; ++i) {
          auto rounded = [&](float value) {
            return Tensor::from_doubles(type, {value}, {1});
          };
          auto as_float = [&](const Tensor& one, std::size_t at) {
            return static_cast<float>(one.to_doubles()[at]);
          };
          float sum = as_float(rounded(replica_value(0, i)), 0);
          for (int g = 1; g < n(); ++g) sum += as_float(rounded(replica_value(g, i)), 0);
          Tensor want = rounded(sum);
          if (op == ReduceOp::kMean) want = rounded(as_float(want, 0) / static_cast<float>(n()));
          const std::size_t element = element_size(type);
          if (std::memcmp(static_cast<const std::byte*>(got.raw_data()) + i * element,
                          want.raw_data(), element) != 0 &&
              ++wrong <= 3) {
            ADD_FAILURE() << to_string(type) << " " << to_string(op) << " tensor " << t
                          << ": rank " << world_rank() << " index " << i << " expected "
                          << as_float(want, 0) << " actual " << got.to_doubles()[i];
          }
        }
      }
    }
  }
}

TEST_P(MultiWorker, NcclOnHostTensorsFallsBackToRing) {
  CommunicationOptions options;
  options.implementation = CommunicationImplementation::kNccl;
  MultiWorkerMirroredStrategy nccl(options, MirroredStrategy::cpu_devices(k()));
  const PerReplica<Tensor> ones = nccl.run([] { return floats({1, 2}); });
  EXPECT_TRUE(tensor_equals(nccl.reduce(ReduceOp::kSum, ones), DataType::kFloat32, {2}, {double(n()), 2.0 * n()}));
}

// Every element exactly once across all replicas of all workers: each
// replica counts what it saw, and the counts are summed over everyone.
void expect_each_once(Strategy& strategy, const DistributedDataset& data, std::int64_t elements,
                      const std::string& what) {
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::int64_t> counts(static_cast<std::size_t>(elements), 0);
    for (const PerReplica<Element>& batch : data) {
      const PerReplica<Tensor> seen = strategy.run([&](const Element& slice) {
        Tensor histogram(DataType::kInt64, {elements});
        for (std::int64_t id : slice[0].values<std::int64_t>()) histogram.values<std::int64_t>()[static_cast<std::size_t>(id)]++;
        return histogram;
      }, batch);
      const Tensor total = strategy.reduce(ReduceOp::kSum, seen);
      for (std::int64_t i = 0; i < elements; ++i) counts[static_cast<std::size_t>(i)] += total.values<std::int64_t>()[static_cast<std::size_t>(i)];
    }
    for (std::int64_t i = 0; i < elements; ++i) {
      ASSERT_EQ(counts[static_cast<std::size_t>(i)], 1) << what << ": element " << i << " epoch " << epoch;
    }
  }
}

TEST_P(MultiWorker, InputShardedByElement) {
  for (std::int64_t global : {1, 5, 8}) {
    const DistributedDataset data = strategy.experimental_distribute_dataset(Dataset::range(29).batch(global));
    EXPECT_EQ(data.sharding(), w() == 1 ? InputSharding::kSingleWorker : InputSharding::kByElement);
    // Per-replica sizes: the global split of each global batch.
    DistributedIterator iterator = data.make_iterator();
    const PerReplica<Element> first = iterator.get_next();
    for (int r = 0; r < k(); ++r) {
      const std::int64_t g = world_rank() * k() + r;
      const std::int64_t size = global / n() + (g < global % n() ? 1 : 0);
      EXPECT_EQ(first[static_cast<std::size_t>(r)][0].dim(0), size) << "global " << global << " replica " << g;
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
      const std::string path = "/tmp/strategies_mw_test_" + std::to_string(getppid()) + "_" + std::to_string(f);
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
    if (world_rank() == 0) for (const std::string& path : paths_) std::remove(path.c_str());
  }
  const std::vector<std::string>& paths() const { return paths_; }

 private:
  std::vector<std::string> paths_;
};

Dataset ids_from_files(const std::vector<std::string>& paths) {
  return Dataset::from_files(paths, Dataset::float_line_reader()).map([](Element e) {
    return Element{Tensor::scalar<std::int64_t>(static_cast<std::int64_t>(e[0].values<float>()[0]))};
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
  const DistributedDataset data = strategy.distribute_datasets_from_function([&](const InputContext& context) {
    EXPECT_EQ(context.num_input_pipelines(), w());
    EXPECT_EQ(context.input_pipeline_id(), world_rank());
    EXPECT_EQ(context.num_replicas_in_sync(), n());
    // Worker i keeps elements i, i + w, ...: uneven when w does not divide 31.
    return Dataset::range(31).shard(context.num_input_pipelines(), context.input_pipeline_id())
        .batch(context.get_per_replica_batch_size(2 * n()));
  });
  expect_each_once(strategy, data, 31, "from function");
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
          if (context.local_replica_id() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
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
