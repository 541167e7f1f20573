// Datasets and their distribution over replicas: every element reaches
// exactly one replica once per epoch, per-replica batch sizes follow the
// documented split, and distribute_datasets_from_function gives each replica
// its own batches.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <algorithm>
#include <map>
#include <optional>

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
  const Dataset data =
      Dataset::from_tensor_slices({Tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{3, 2}),
                                   Tensor(std::vector<std::int32_t>{7, 8, 9}, {3})});
  const std::vector<Element> elements = data.collect();
  ASSERT_EQ(elements.size(), 3u);
  EXPECT_TRUE(tensor_equals(elements[1][0], DataType::kFloat32, {2}, {3, 4}));
  EXPECT_TRUE(tensor_equals(elements[2][1], DataType::kInt32, {}, {9}));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] {
        Dataset::from_tensor_slices(
            {Tensor(DataType::kFloat32, {3}), Tensor(DataType::kFloat32, {2})});
      },
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
  EXPECT_EQ(data.describe(),
            "range(0, 10) -> map -> shard(3, 1) -> repeat(2) -> take(5) -> batch(2)");
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

// tf.data: repeat(0) is an empty dataset; its input is never opened (no
// generator made, no shuffle pass taken). -1 (the default) is forever.
TEST(Dataset, RepeatZeroIsEmptyAndOpensNothing) {
  auto generators_made = std::make_shared<int>(0);
  const Dataset counted = Dataset::from_generator([generators_made] {
    ++*generators_made;
    auto next = std::make_shared<std::int64_t>(0);
    return Generator([next]() -> std::optional<Element> {
      if (*next == 3) return std::nullopt;
      return Element{Tensor::scalar<std::int64_t>((*next)++)};
    });
  });
  const std::vector<Element> none = counted.repeat(0).collect();
  EXPECT_EQ(none.size(), 0u) << "repeat(0) yielded " << none.size() << " elements, expected none";
  EXPECT_EQ(*generators_made, 0) << "repeat(0) opened its input";
  EXPECT_EQ(Dataset::range(5).repeat(0).batch(2).collect().size(), 0u);
  EXPECT_FALSE(Dataset::range(5).repeat(0).element_spec().has_value());
  // Every other count: exactly count passes, in order.
  for (std::int64_t count : {1, 2, 3}) {
    const std::vector<Element> elements = Dataset::range(4).repeat(count).collect();
    ASSERT_EQ(elements.size(), static_cast<std::size_t>(4 * count)) << "repeat(" << count << ")";
    for (std::size_t i = 0; i < elements.size(); ++i) {
      EXPECT_EQ(elements[i][0].values<std::int64_t>()[0], static_cast<std::int64_t>(i % 4))
          << "repeat(" << count << ") element " << i;
    }
  }
  const std::vector<Element> forever = Dataset::range(4).repeat().take(10).collect();
  ASSERT_EQ(forever.size(), 10u);
  for (std::size_t i = 0; i < forever.size(); ++i) {
    EXPECT_EQ(forever[i][0].values<std::int64_t>()[0], static_cast<std::int64_t>(i % 4))
        << "element " << i;
  }
  // A shuffle under repeat(0) takes no pass: the next pass is still the first.
  const Dataset shuffled = Dataset::range(16).shuffle(16, 5);
  const std::vector<Element> first_pass = Dataset::range(16).shuffle(16, 5).collect();
  EXPECT_EQ(shuffled.repeat(0).collect().size(), 0u);
  const std::vector<Element> after = shuffled.collect();
  ASSERT_EQ(after.size(), first_pass.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i][0].values<std::int64_t>()[0], first_pass[i][0].values<std::int64_t>()[0])
        << "element " << i << " of the pass after repeat(0)";
  }
}

// An iterator owns its pipeline: made from a temporary Dataset, it still
// runs every stage's function (which the dataset's graph holds) correctly.
TEST(Dataset, IteratorOutlivesItsDataset) {
  {
    // The reported chain: from_tensor_slices -> map -> batch, iterator of a temporary.
    Tensor x(std::vector<float>{0, 1, 2, 3, 4, 5, 6}, Shape{7});
    Dataset::Iterator iterator = Dataset::from_tensor_slices({x})
                                     .map([](Element e) {
                                       e[0].values<float>()[0] *= 10;
                                       return e;
                                     })
                                     .batch(3)
                                     .make_iterator();
    const std::vector<std::vector<float>> expected = {{0, 10, 20}, {30, 40, 50}, {60}};
    for (std::size_t b = 0; b < expected.size(); ++b) {
      std::optional<Element> batch = iterator.get_next();
      ASSERT_TRUE(batch.has_value()) << "batch " << b << " missing";
      const auto values = batch->at(0).values<float>();
      ASSERT_EQ(values.size(), expected[b].size()) << "batch " << b;
      for (std::size_t i = 0; i < values.size(); ++i) {
        EXPECT_EQ(values[i], expected[b][i]) << "batch " << b << " index " << i;
      }
    }
    EXPECT_FALSE(iterator.get_next().has_value());
  }
  // Every kind of stage: its function (holding a sentinel) lives exactly as
  // long as the last iterator or dataset that uses it.
  auto sentinel = std::make_shared<int>(0);
  const std::weak_ptr<int> alive = sentinel;
  const auto make_pipeline = [&sentinel] {
    const auto keep = sentinel;
    return Dataset::from_generator([keep] {
             auto next = std::make_shared<std::int64_t>(0);
             return Generator([next, keep]() -> std::optional<Element> {
               if (*next == 20) return std::nullopt;
               return Element{Tensor::scalar<std::int64_t>((*next)++)};
             });
           })
        .map([keep](Element e) {
          e[0].values<std::int64_t>()[0] += 100;
          return e;
        })
        .filter([keep](const Element& e) { return e[0].values<std::int64_t>()[0] % 3 != 0; })
        .shard(1, 0)
        .take(12)
        .repeat(2)
        .shuffle(4, 9)
        .batch(5)
        .prefetch(2);
  };
  const std::vector<Element> reference = make_pipeline().collect();
  Dataset::Iterator iterator = make_pipeline().make_iterator();
  sentinel.reset();
  EXPECT_FALSE(alive.expired()) << "the pipeline's functions died with its Dataset";
  std::vector<Element> got;
  while (std::optional<Element> batch = iterator.get_next()) got.push_back(std::move(*batch));
  ASSERT_EQ(got.size(), reference.size());
  for (std::size_t b = 0; b < got.size(); ++b) {
    const auto values = got[b][0].values<std::int64_t>();
    const auto want = reference[b][0].values<std::int64_t>();
    ASSERT_EQ(values.size(), want.size()) << "batch " << b;
    for (std::size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(values[i], want[i]) << "batch " << b << " index " << i;
    }
  }
  iterator = Dataset::range(1).make_iterator();
  EXPECT_TRUE(alive.expired()) << "the pipeline outlived its last iterator";
}

// A distributed iterator keeps its dataset and the strategy's state it
// iterates with alive: the strategy and both datasets may go first.
TEST(DistributedDataset, IteratorOutlivesStrategyAndDatasets) {
  std::optional<DistributedIterator> iterator;
  std::optional<DistributedDataset> distributed;
  {
    auto strategy = std::make_unique<MirroredStrategy>(MirroredStrategy::cpu_devices(2));
    distributed.emplace(strategy->experimental_distribute_dataset(
        Dataset::range(10).map([](Element e) { return e; }).batch(4)));
    iterator.emplace(distributed->make_iterator());
  }
  DistributedIterator second = distributed->make_iterator();
  distributed.reset();
  for (DistributedIterator* it : {&*iterator, &second}) {
    const std::vector<std::vector<std::vector<std::int64_t>>> expected = {
        {{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}, {{8}, {9}}};
    for (std::size_t step = 0; step < expected.size(); ++step) {
      std::optional<PerReplica<Element>> batch = it->get_next_as_optional();
      ASSERT_TRUE(batch.has_value()) << "step " << step;
      for (std::size_t r = 0; r < 2; ++r) {
        EXPECT_EQ(ids_of(batch->values()[r]), expected[step][r])
            << "step " << step << " replica " << r;
      }
    }
    EXPECT_FALSE(it->get_next_as_optional().has_value());
  }
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
  EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { data.batch(2).collect(); },
                                                "does not match element 0"));
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
      [&] { Dataset::from_files(bad.paths(), Dataset::float_line_reader()).collect(); },
      ":1: not a number"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { Dataset::from_files({"/nonexistent/file"}, Dataset::float_line_reader()).collect(); },
      "cannot open"));
  // with_files swaps the source, keeping the transformations.
  const Dataset second = data.batch(5).with_files({files.paths()[1]});
  EXPECT_EQ(second.collect().front()[0].dim(0), 1);
}

// Every element of range(n) batched by `global` reaches exactly one replica,
// and replica r's batch sizes follow the documented split.
void check_exactly_once(Strategy& strategy, std::int64_t n, std::int64_t global,
                        bool drop_remainder) {
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
    ASSERT_EQ(static_cast<std::int64_t>(seen.size()), expected_count)
        << "n " << n << " global " << global;
    for (const auto& [id, count] : seen)
      ASSERT_EQ(count, 1) << "element " << id << " epoch " << epoch;
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
  const Dataset data =
      Dataset::from_tensor_slices({Tensor(std::vector<float>(20, 1.0f), Shape{10, 2}),
                                   Tensor(std::vector<std::int64_t>(10, 1), {10})});
  double total = 0;
  for (const PerReplica<Element>& batch : strategy.experimental_distribute_dataset(data.batch(4))) {
    const PerReplica<Tensor> rows = strategy.run(
        [](const Element& slice) {
          return Tensor::scalar<float>(static_cast<float>(slice[0].dim(0)));
        },
        batch);
    total += strategy.reduce(ReduceOp::kSum, rows).values<float>()[0];
  }
  EXPECT_EQ(total, 10);
}

TEST(DistributeDataset, NeedsABatchedDataset) {
  MirroredStrategy strategy(MirroredStrategy::cpu_devices(2));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { strategy.experimental_distribute_dataset(Dataset::range(4).prefetch(2)); },
      "add batch(global_batch_size)"));
  const DistributedDataset data =
      strategy.experimental_distribute_dataset(Dataset::range(2).batch(2));
  DistributedIterator iterator = data.make_iterator();
  (void)iterator.get_next();
  EXPECT_TRUE(throws_with<Error>([&] { (void)iterator.get_next(); }, "end of sequence"));
  EXPECT_FALSE(iterator.get_next_as_optional().has_value());
}

TEST(DistributeDatasetsFromFunction, EachReplicaGetsItsOwnBatches) {
  for (int k = 1; k <= 4; ++k) {
    MirroredStrategy strategy(MirroredStrategy::cpu_devices(k));
    int calls = 0;
    const DistributedDataset data =
        strategy.distribute_datasets_from_function([&](const InputContext& context) {
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
        for (std::size_t i = 0; i < ids.size(); ++i)
          EXPECT_EQ(ids[i], 2 * b + static_cast<std::int64_t>(i));
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
  EXPECT_TRUE(
      throws_with<InvalidArgumentError>([] { InputContext(2, 2, 1); }, "input_pipeline_id"));
}

TEST(Dataset, FilterKeepsMatchingElements) {
  const std::vector<Element> kept =
      Dataset::range(10)
          .filter([](const Element& e) { return e[0].values<std::int64_t>()[0] % 3 == 0; })
          .collect();
  ASSERT_EQ(kept.size(), 4u);
  for (std::size_t i = 0; i < kept.size(); ++i)
    EXPECT_EQ(kept[i][0].values<std::int64_t>()[0], 3 * static_cast<std::int64_t>(i));
  EXPECT_TRUE(throws_with<InvalidArgumentError>([] { Dataset::range(1).filter(nullptr); },
                                                "predicate is empty"));
}

std::vector<std::int64_t> all_ids(const Dataset& data) {
  std::vector<std::int64_t> ids;
  for (const Element& e : data.collect()) {
    for (std::int64_t id : e[0].values<std::int64_t>()) ids.push_back(id);
  }
  return ids;
}

// Deterministic for a seed, a permutation, a new order each pass, the k-th
// pass the same for equal seeds; buffer 1 keeps the order.
TEST(Dataset, ShuffleIsADeterministicPermutationPerSeed) {
  const Dataset a = Dataset::range(50).shuffle(8, 42);
  const Dataset b = Dataset::range(50).shuffle(8, 42);
  const std::vector<std::int64_t> a1 = all_ids(a), a2 = all_ids(a), b1 = all_ids(b),
                                  b2 = all_ids(b);
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a2, b2);
  EXPECT_NE(a1, a2);
  std::vector<std::int64_t> sorted = a1;
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t i = 0; i < 50; ++i) ASSERT_EQ(sorted[static_cast<std::size_t>(i)], i);
  std::vector<std::int64_t> identity(50);
  for (std::int64_t i = 0; i < 50; ++i) identity[static_cast<std::size_t>(i)] = i;
  EXPECT_NE(a1, identity);
  EXPECT_NE(all_ids(Dataset::range(50).shuffle(8, 43)), a1);
  EXPECT_EQ(all_ids(Dataset::range(50).shuffle(1, 42)), identity);
  // Without reshuffling every pass has the same order; element_spec does
  // not advance the passes.
  const Dataset fixed = Dataset::range(20).shuffle(20, 7, false);
  const Dataset moving = Dataset::range(20).shuffle(20, 7);
  EXPECT_EQ(all_ids(fixed), all_ids(fixed));
  const std::vector<std::int64_t> first = all_ids(moving);
  (void)moving.element_spec();
  EXPECT_EQ(all_ids(Dataset::range(20).shuffle(20, 7)), first);
  // The elements stay within the buffer's reach: element i comes out
  // at position >= i - buffer + 1.
  for (std::size_t pos = 0; pos < a1.size(); ++pos)
    EXPECT_LE(a1[pos], static_cast<std::int64_t>(pos) + 7);
  EXPECT_TRUE(
      throws_with<InvalidArgumentError>([] { Dataset::range(1).shuffle(0, 1); }, "buffer_size"));
}

TEST(Dataset, PrefetchKeepsElementsOrderAndErrors) {
  for (std::int64_t buffer : {1, 3, 64}) {
    const Dataset data = Dataset::range(37).map([](Element e) { return e; }).prefetch(buffer);
    std::vector<std::int64_t> identity(37);
    for (std::int64_t i = 0; i < 37; ++i) identity[static_cast<std::size_t>(i)] = i;
    EXPECT_EQ(all_ids(data), identity) << "buffer " << buffer;
    EXPECT_EQ(all_ids(data.batch(5)), identity);
    // An iterator dropped before the end stops its producer.
    Dataset::Iterator partial = Dataset::range(1000).repeat().prefetch(buffer).make_iterator();
    EXPECT_EQ(partial.get_next()->at(0).values<std::int64_t>()[0], 0);
  }
  // An input error reaches the consumer at the element it replaced.
  const Dataset failing = Dataset::range(5)
                              .map([](Element e) {
                                if (e[0].values<std::int64_t>()[0] == 3)
                                  throw InvalidArgumentError("map", -1, "element 3 is bad");
                                return e;
                              })
                              .prefetch(2);
  Dataset::Iterator iterator = failing.make_iterator();
  for (std::int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(iterator.get_next()->at(0).values<std::int64_t>()[0], i);
  EXPECT_TRUE(
      throws_with<InvalidArgumentError>([&] { (void)iterator.get_next(); }, "element 3 is bad"));
  EXPECT_TRUE(
      throws_with<InvalidArgumentError>([] { Dataset::range(1).prefetch(0); }, "buffer_size"));
}

// A pipeline with transformations after batch is rebatched as tf.distribute
// does: the global batches it yields are split across the replicas.
TEST(DistributeDataset, PipelinesNotEndingInBatchAreRebatched) {
  MirroredStrategy strategy(MirroredStrategy::cpu_devices(3));
  const Dataset pipeline = Dataset::range(20)
                               .batch(7)
                               .filter([](const Element& e) { return e[0].dim(0) > 0; })
                               .repeat(2)
                               .prefetch(2);
  const DistributedDataset data = strategy.experimental_distribute_dataset(pipeline);
  EXPECT_EQ(data.global_batch_size(), 7);
  std::map<std::int64_t, int> seen;
  int steps = 0;
  for (const PerReplica<Element>& step : data) {
    const std::int64_t rows = (steps % 3 == 2) ? 6 : 7;  // 7, 7, 6 per pass
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(step[static_cast<std::size_t>(r)][0].dim(0), rows / 3 + (r < rows % 3 ? 1 : 0))
          << "step " << steps;
      for (std::int64_t id : ids_of(step[static_cast<std::size_t>(r)])) ++seen[id];
    }
    ++steps;
  }
  EXPECT_EQ(steps, 6);
  ASSERT_EQ(seen.size(), 20u);
  for (const auto& [id, count] : seen) EXPECT_EQ(count, 2) << "element " << id;
  // element_spec: one replica's batch, its leading dimension unknown.
  const std::optional<ElementSpec> spec =
      strategy
          .experimental_distribute_dataset(
              Dataset::from_tensor_slices({Tensor(DataType::kFloat32, {6, 2})}).batch(4))
          .element_spec();
  ASSERT_TRUE(spec.has_value());
  ASSERT_EQ(spec->size(), 1u);
  EXPECT_EQ((*spec)[0].dtype, DataType::kFloat32);
  EXPECT_EQ((*spec)[0].shape, (Shape{-1, 2}));
  EXPECT_FALSE(strategy.experimental_distribute_dataset(Dataset::range(0).batch(2))
                   .element_spec()
                   .has_value());
  InputOptions per_replica;
  per_replica.experimental_replication_mode = InputReplicationMode::kPerReplica;
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { strategy.experimental_distribute_dataset(Dataset::range(4).batch(2), per_replica); },
      "only supported by distribute_datasets_from_function"));
}

TEST(DistributeValuesFromFunction, EachReplicaGetsItsValueContext) {
  for (int k = 1; k <= 4; ++k) {
    MirroredStrategy strategy(MirroredStrategy::cpu_devices(k));
    const PerReplica<Tensor> values =
        strategy.experimental_distribute_values_from_function([](const ValueContext& context) {
          return Tensor(std::vector<std::int32_t>{context.replica_id_in_sync_group(),
                                                  context.num_replicas_in_sync()},
                        {2});
        });
    ASSERT_EQ(values.num_replicas(), static_cast<std::size_t>(k));
    const PerReplica<Tensor> seen = strategy.run([](const Tensor& value) { return value; }, values);
    for (int r = 0; r < k; ++r)
      EXPECT_TRUE(tensor_equals(seen[static_cast<std::size_t>(r)], DataType::kInt32, {2},
                                {double(r), double(k)}));
  }
  EXPECT_TRUE(
      throws_with<InvalidArgumentError>([] { ValueContext(2, 2); }, "replica_id_in_sync_group"));
}

TEST(DistributeDatasetsFromFunction, PerReplicaModeBuildsOnePipelinePerReplica) {
  for (int k = 1; k <= 3; ++k) {
    MirroredStrategy strategy(MirroredStrategy::cpu_devices(k));
    InputOptions options;
    options.experimental_replication_mode = InputReplicationMode::kPerReplica;
    std::vector<int> ids;
    const DistributedDataset data = strategy.distribute_datasets_from_function(
        [&](const InputContext& context) {
          EXPECT_EQ(context.num_input_pipelines(), k);
          EXPECT_EQ(context.num_replicas_in_sync(), k);
          ids.push_back(context.input_pipeline_id());
          // Replica r: 3 + r elements starting at 100 r, batches of 2.
          const std::int64_t r = context.input_pipeline_id();
          return Dataset::range(100 * r, 100 * r + 3 + r).batch(2);
        },
        options);
    std::vector<int> want(static_cast<std::size_t>(k));
    for (int r = 0; r < k; ++r) want[static_cast<std::size_t>(r)] = r;
    EXPECT_EQ(ids, want);
    std::vector<std::vector<std::int64_t>> per_replica(static_cast<std::size_t>(k));
    int steps = 0;
    for (const PerReplica<Element>& step : data) {
      for (int r = 0; r < k; ++r) {
        for (std::int64_t id : ids_of(step[static_cast<std::size_t>(r)]))
          per_replica[static_cast<std::size_t>(r)].push_back(id);
      }
      ++steps;
    }
    EXPECT_EQ(steps, (3 + k - 1 + 1) / 2) << "k " << k;  // the longest replica's batches
    for (int r = 0; r < k; ++r) {
      std::vector<std::int64_t> expected;
      for (std::int64_t i = 0; i < 3 + r; ++i) expected.push_back(100 * r + i);
      EXPECT_EQ(per_replica[static_cast<std::size_t>(r)], expected) << "replica " << r;
    }
  }
}

}  // namespace
}  // namespace collective::distribute
