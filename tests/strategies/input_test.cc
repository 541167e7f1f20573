// Datasets and their distribution over replicas: every element reaches
// exactly one replica once per epoch, per-replica batch sizes follow the
// documented split, and distribute_datasets_from_function gives each replica
// its own batches.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "strategies_test_util.h"

namespace collective::distribute {
namespace {

using testing::tensor_equals;
using testing::throws_with;

std::vector<std::int64_t> ids_of(const Element& batch) {
  const auto values = batch[0].values<std::int64_t>();
  return {values.begin(), values.end()};
}

TEST(Dataset, FromTensorSlicesSlicesTheFirstDimension) {
  const Dataset data = Dataset::from_tensor_slices(
      {Tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{3, 2}), Tensor(std::vector<std::int32_t>{7, 8, 9}, {3})});
  const std::vector<Element> elements = data.collect();
  ASSERT_EQ(elements.size(), 3u);
  EXPECT_TRUE(tensor_equals(elements[1][0], DataType::kFloat32, {2}, {3, 4}));
  EXPECT_TRUE(tensor_equals(elements[2][1], DataType::kInt32, {}, {9}));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] { Dataset::from_tensor_slices({Tensor(DataType::kFloat32, {3}), Tensor(DataType::kFloat32, {2})}); },
      "first dimension of the same size"));
}

TEST(Dataset, TransformationsCompose) {
  const Dataset data = Dataset::range(10)
                           .map([](Element e) {
                             e[0].values<std::int64_t>()[0] *= 2;
                             return e;
                           })
                           .shard(3, 1)
                           .repeat(2)
                           .take(5)
                           .batch(2);
  EXPECT_EQ(data.describe(), "range(0, 10) -> map -> shard(3, 1) -> repeat(2) -> take(5) -> batch(2)");
  const std::vector<Element> batches = data.collect();
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(ids_of(batches[0]), (std::vector<std::int64_t>{2, 8}));
  EXPECT_EQ(ids_of(batches[1]), (std::vector<std::int64_t>{14, 2}));
  EXPECT_EQ(ids_of(batches[2]), (std::vector<std::int64_t>{8}));
  EXPECT_EQ(Dataset::range(5).batch(2, true).collect().size(), 2u);
  EXPECT_EQ(data.batch_size(), 2);
  EXPECT_TRUE(throws_with<InvalidArgumentError>([] { Dataset::range(3).batch(0); }, "batch_size"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>([] { Dataset::range(3).shard(2, 2); }, "index"));
  // An empty dataset repeated forever ends instead of spinning.
  EXPECT_TRUE(Dataset::range(0).repeat().collect().empty());
}

TEST(Dataset, GeneratorRestartsEachPass) {
  const Dataset data = Dataset::from_generator([] {
    auto next = std::make_shared<std::int64_t>(0);
    return Generator([next]() -> std::optional<Element> {
      if (*next == 4) return std::nullopt;
      return Element{Tensor::scalar<std::int64_t>((*next)++)};
    });
  });
  EXPECT_EQ(data.collect().size(), 4u);
  EXPECT_EQ(data.repeat(3).collect().size(), 12u);
}

TEST(Dataset, BatchRejectsElementsOfDifferentShapes) {
  const Dataset data = Dataset::from_generator([] {
    auto n = std::make_shared<int>(0);
    return Generator([n]() -> std::optional<Element> {
      if (*n == 2) return std::nullopt;
      return Element{Tensor(DataType::kFloat32, {++*n})};
    });
  });
  EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { data.batch(2).collect(); }, "does not match element 0"));
}

class TempFiles {
 public:
  explicit TempFiles(const std::vector<std::vector<std::string>>& contents) {
    for (std::size_t f = 0; f < contents.size(); ++f) {
      char name[] = "/tmp/strategies_input_test_XXXXXX";
      const int fd = mkstemp(name);
      close(fd);
      std::ofstream out(name);
      for (const std::string& line : contents[f]) out << line << "\n";
      paths_.push_back(name);
    }
  }
  ~TempFiles() {
    for (const std::string& path : paths_) std::remove(path.c_str());
  }
  const std::vector<std::string>& paths() const { return paths_; }

 private:
  std::vector<std::string> paths_;
};

TEST(Dataset, FilesReadInOrderWithTheFloatLineReader) {
  TempFiles files({{"1 2", "", "3 4"}, {"5 6"}});
  const Dataset data = Dataset::from_files(files.paths(), Dataset::float_line_reader());
  EXPECT_EQ(data.files(), files.paths());
  const std::vector<Element> elements = data.batch(3).collect();
  ASSERT_EQ(elements.size(), 1u);
  EXPECT_TRUE(tensor_equals(elements[0][0], DataType::kFloat32, {3, 2}, {1, 2, 3, 4, 5, 6}));
  TempFiles bad({{"1 x"}});
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { Dataset::from_files(bad.paths(), Dataset::float_line_reader()).collect(); }, ":1: not a number"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { Dataset::from_files({"/nonexistent/file"}, Dataset::float_line_reader()).collect(); },
      "cannot open"));
  // with_files swaps the source, keeping the transformations.
  const Dataset second = data.batch(5).with_files({files.paths()[1]});
  EXPECT_EQ(second.collect().front()[0].dim(0), 1);
}

// Every element of range(n) batched by `global` reaches exactly one replica,
// and replica r's batch sizes follow the documented split.
void check_exactly_once(Strategy& strategy, std::int64_t n, std::int64_t global, bool drop_remainder) {
  const DistributedDataset data =
      strategy.experimental_distribute_dataset(Dataset::range(n).batch(global, drop_remainder));
  EXPECT_EQ(data.sharding(), InputSharding::kSingleWorker);
  EXPECT_EQ(data.global_batch_size(), global);
  const std::int64_t k = strategy.num_replicas_in_sync();
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::map<std::int64_t, int> seen;
    std::int64_t step = 0;
    for (const PerReplica<Element>& batch : data) {
      const std::int64_t rows = std::min(global, n - step * global);
      ASSERT_EQ(batch.num_replicas(), static_cast<std::size_t>(k));
      std::int64_t expected_first = step * global;
      for (std::int64_t r = 0; r < k; ++r) {
        const std::int64_t size = rows / k + (r < rows % k ? 1 : 0);
        const std::vector<std::int64_t> ids = ids_of(batch[static_cast<std::size_t>(r)]);
        ASSERT_EQ(static_cast<std::int64_t>(ids.size()), size)
            << "n " << n << " global " << global << " step " << step << " replica " << r;
        for (std::size_t i = 0; i < ids.size(); ++i) {
          EXPECT_EQ(ids[i], expected_first + static_cast<std::int64_t>(i)) << "replica " << r;
          ++seen[ids[i]];
        }
        expected_first += size;
      }
      ++step;
    }
    const std::int64_t expected_count = drop_remainder ? n / global * global : n;
    ASSERT_EQ(static_cast<std::int64_t>(seen.size()), expected_count) << "n " << n << " global " << global;
    for (const auto& [id, count] : seen) ASSERT_EQ(count, 1) << "element " << id << " epoch " << epoch;
  }
}

TEST(DistributeDataset, EveryElementExactlyOncePerEpoch) {
  for (int k = 1; k <= 4; ++k) {
    MirroredStrategy strategy(MirroredStrategy::cpu_devices(k));
    for (std::int64_t n : {0, 1, 7, 23, 40}) {
      for (std::int64_t global : {1, 3, 4, 8, 10}) {
        check_exactly_once(strategy, n, global, false);
        check_exactly_once(strategy, n, global, true);
      }
    }
  }
  check_exactly_once(get_strategy(), 23, 5, false);
  OneDeviceStrategy one;
  check_exactly_once(one, 23, 5, false);
}

TEST(DistributeDataset, FeedsTheReplicasOfRun) {
  MirroredStrategy strategy(MirroredStrategy::cpu_devices(3));
  const Dataset data = Dataset::from_tensor_slices(
      {Tensor(std::vector<float>(20, 1.0f), Shape{10, 2}), Tensor(std::vector<std::int64_t>(10, 1), {10})});
  double total = 0;
  for (const PerReplica<Element>& batch : strategy.experimental_distribute_dataset(data.batch(4))) {
    const PerReplica<Tensor> rows = strategy.run([](const Element& slice) {
      return Tensor::scalar<float>(static_cast<float>(slice[0].dim(0)));
    }, batch);
    total += strategy.reduce(ReduceOp::kSum, rows).values<float>()[0];
  }
  EXPECT_EQ(total, 10);
}

TEST(DistributeDataset, NeedsABatchedDataset) {
  MirroredStrategy strategy(MirroredStrategy::cpu_devices(2));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { strategy.experimental_distribute_dataset(Dataset::range(4)); }, "must end with batch"));
  const DistributedDataset data = strategy.experimental_distribute_dataset(Dataset::range(2).batch(2));
  DistributedIterator iterator = data.make_iterator();
  (void)iterator.get_next();
  EXPECT_TRUE(throws_with<Error>([&] { (void)iterator.get_next(); }, "end of sequence"));
  EXPECT_FALSE(iterator.get_next_as_optional().has_value());
}

TEST(DistributeDatasetsFromFunction, EachReplicaGetsItsOwnBatches) {
  for (int k = 1; k <= 4; ++k) {
    MirroredStrategy strategy(MirroredStrategy::cpu_devices(k));
    int calls = 0;
    const DistributedDataset data = strategy.distribute_datasets_from_function([&](const InputContext& context) {
      ++calls;
      EXPECT_EQ(context.num_input_pipelines(), 1);
      EXPECT_EQ(context.input_pipeline_id(), 0);
      EXPECT_EQ(context.num_replicas_in_sync(), k);
      const std::int64_t per_replica = context.get_per_replica_batch_size(2 * k);
      EXPECT_EQ(per_replica, 2);
      return Dataset::range(23).batch(per_replica);
    });
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(data.sharding(), InputSharding::kFromFunction);
    std::map<std::int64_t, int> seen;
    std::int64_t batch_index = 0;
    for (const PerReplica<Element>& step : data) {
      for (int r = 0; r < k; ++r) {
        const std::vector<std::int64_t> ids = ids_of(step[static_cast<std::size_t>(r)]);
        // Replica r gets batch step * k + r: ids 2b, 2b+1 (or fewer at the end).
        const std::int64_t b = batch_index + r;
        for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], 2 * b + static_cast<std::int64_t>(i));
        for (std::int64_t id : ids) ++seen[id];
      }
      batch_index += k;
    }
    ASSERT_EQ(seen.size(), 23u) << "k " << k;
    for (const auto& [id, count] : seen) EXPECT_EQ(count, 1) << "element " << id;
  }
  const InputContext context(2, 1, 4);
  EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { context.get_per_replica_batch_size(6); },
                                                "not divisible by num_replicas_in_sync 4"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>([] { InputContext(2, 2, 1); }, "input_pipeline_id"));
}

}  // namespace
}  // namespace collective::distribute
