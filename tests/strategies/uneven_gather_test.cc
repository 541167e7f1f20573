// Strategy::gather and ReplicaContext::all_gather of values whose length
// along the gather axis differs between replicas (zero rows included), as
// tf.distribute's do: under MirroredStrategy (replicas as threads of one
// process) and MultiWorkerMirroredStrategy (1-4 workers under mpirun, 1-3
// local replicas each, AUTO and RING), every dtype, axis 0, another axis
// and a negative one, values of rank above the inline limit; and values
// that cannot be concatenated, refused with the same error on every worker
// (naming the replicas and their shapes) before any output, after which the
// strategy still gathers. Expected values are exact, every element.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "strategies_test_util.h"

namespace collective::distribute {
namespace {

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

struct Layout {
  bool multi_worker;
  int local_replicas;
  CommunicationImplementation implementation;
};

std::string layout_name(const ::testing::TestParamInfo<Layout>& info) {
  const Layout& layout = info.param;
  return std::string(layout.multi_worker ? "MultiWorker" : "Mirrored") + "_x" +
         std::to_string(layout.local_replicas) +
         (layout.implementation == CommunicationImplementation::kRing ? "_ring" : "");
}

class UnevenGather : public ::testing::TestWithParam<Layout> {
 public:
  void SetUp() override {
    const Layout& layout = GetParam();
    CommunicationOptions options;
    options.implementation = layout.implementation;
    // Long enough for a loaded machine; short enough that a worker left
    // waiting (a refusal on one worker only) fails the run instead of
    // stalling it.
    options.timeout_seconds = 60;
    const auto devices = MirroredStrategy::cpu_devices(layout.local_replicas);
    if (layout.multi_worker) {
      strategy_ = std::make_unique<MultiWorkerMirroredStrategy>(options, devices);
      workers_ = world_size();
      worker_ = world_rank();
    } else {
      strategy_ = std::make_unique<MirroredStrategy>(devices);
    }
  }

  Strategy& strategy() { return *strategy_; }
  int k() const { return GetParam().local_replicas; }
  int n() const { return k() * workers_; }
  int worker() const { return worker_; }
  std::string where(const std::string& what) const {
    return "worker " + std::to_string(worker_) + ", " + what;
  }

  std::unique_ptr<Strategy> strategy_;
  int workers_ = 1;
  int worker_ = 0;
};

// Replica g's rows along the axis: 0 for some replicas, up to 4.
int rows_of(int g) { return (g * 3 + 1) % 5; }
// Element (g, row, column), exact in every dtype (small integers).
double element(int g, int row, int column) { return (g * 11 + row * 3 + column) % 100; }

// Replica g's value: rows_of(g) x width, laid out as `shape` says (the rows
// along `axis` of `shape`, which has one other dimension of `width`).
Tensor replica_rows(DataType dtype, int g, int width, bool rows_first) {
  const int rows = rows_of(g);
  std::vector<double> values;
  if (rows_first) {
    for (int row = 0; row < rows; ++row)
      for (int c = 0; c < width; ++c) values.push_back(element(g, row, c));
    return Tensor::from_doubles(dtype, values, {rows, width});
  }
  for (int c = 0; c < width; ++c)
    for (int row = 0; row < rows; ++row) values.push_back(element(g, row, c));
  return Tensor::from_doubles(dtype, values, {width, rows});
}

// What gathering every replica's replica_rows gives.
std::vector<double> expected_rows(int n, int width, bool rows_first, std::int64_t* total) {
  *total = 0;
  for (int g = 0; g < n; ++g) *total += rows_of(g);
  std::vector<double> want;
  if (rows_first) {
    for (int g = 0; g < n; ++g)
      for (int row = 0; row < rows_of(g); ++row)
        for (int c = 0; c < width; ++c) want.push_back(element(g, row, c));
  } else {
    for (int c = 0; c < width; ++c)
      for (int g = 0; g < n; ++g)
        for (int row = 0; row < rows_of(g); ++row) want.push_back(element(g, row, c));
  }
  return want;
}

TEST_P(UnevenGather, Axis0EveryDtype) {
  const int width = 3;
  for (int type = 0; type < kNumDataTypes; ++type) {
    const auto dtype = static_cast<DataType>(type);
    const PerReplica<Tensor> values = strategy().run([&] {
      return replica_rows(dtype, get_replica_context()->replica_id_in_sync_group(), width, true);
    });
    std::int64_t total = 0;
    const std::vector<double> want = expected_rows(n(), width, true, &total);
    const std::string what = where(std::string(to_string(dtype)));
    ASSERT_TRUE(tensor_equals(strategy().gather(values, 0), dtype, {total, width}, want,
                              what + ", Strategy::gather"));
    // Inside run(): every replica gets the whole result.
    const PerReplica<Tensor> inside = strategy().run([&] {
      ReplicaContext& context = *get_replica_context();
      return context.all_gather(
          replica_rows(dtype, context.replica_id_in_sync_group(), width, true), 0);
    });
    for (int r = 0; r < k(); ++r) {
      ASSERT_TRUE(tensor_equals(
          inside[static_cast<std::size_t>(r)], dtype, {total, width}, want,
          what + ", ReplicaContext::all_gather of local replica " + std::to_string(r)));
    }
  }
}

TEST_P(UnevenGather, InnerAndNegativeAxis) {
  const int width = 2;
  const PerReplica<Tensor> values = strategy().run([&] {
    return replica_rows(DataType::kInt32, get_replica_context()->replica_id_in_sync_group(), width,
                        false);
  });
  std::int64_t total = 0;
  const std::vector<double> want = expected_rows(n(), width, false, &total);
  EXPECT_TRUE(tensor_equals(strategy().gather(values, 1), DataType::kInt32, {width, total}, want,
                            where("axis 1")));
  EXPECT_TRUE(tensor_equals(strategy().gather(values, -1), DataType::kInt32, {width, total}, want,
                            where("axis -1")));
  const PerReplica<Tensor> inside = strategy().run([&] {
    ReplicaContext& context = *get_replica_context();
    return context.all_gather(
        replica_rows(DataType::kInt32, context.replica_id_in_sync_group(), width, false), -1);
  });
  for (const Tensor& t : inside.values()) {
    EXPECT_TRUE(tensor_equals(t, DataType::kInt32, {width, total}, want,
                              where("ReplicaContext::all_gather along -1")));
  }
}

TEST_P(UnevenGather, EveryReplicaEmpty) {
  const PerReplica<Tensor> values = strategy().run([] {
    return Tensor(DataType::kFloat64, {0, 5});
  });
  EXPECT_TRUE(tensor_equals(strategy().gather(values, 0), DataType::kFloat64, {0, 5}, {},
                            where("zero rows")));
  // Empty along another dimension: the axis lengths still add up.
  const PerReplica<Tensor> flat = strategy().run([] {
    const int g = get_replica_context()->replica_id_in_sync_group();
    return Tensor(DataType::kInt8, {rows_of(g), 0});
  });
  std::int64_t total = 0;
  for (int g = 0; g < n(); ++g) total += rows_of(g);
  EXPECT_TRUE(tensor_equals(strategy().gather(flat, 0), DataType::kInt8, {total, 0}, {},
                            where("zero columns")));
}

TEST_P(UnevenGather, RankAboveTheInlineLimit) {
  // Rank 10: the shapes travel in a second exchange.
  const PerReplica<Tensor> values = strategy().run([] {
    const int g = get_replica_context()->replica_id_in_sync_group();
    std::vector<double> v;
    for (int row = 0; row < rows_of(g); ++row)
      for (int c = 0; c < 2; ++c) v.push_back(element(g, row, c));
    return Tensor::from_doubles(DataType::kInt64, v, {rows_of(g), 1, 1, 1, 1, 1, 1, 1, 1, 2});
  });
  std::int64_t total = 0;
  const std::vector<double> want = expected_rows(n(), 2, true, &total);
  EXPECT_TRUE(tensor_equals(strategy().gather(values, 0), DataType::kInt64,
                            {total, 1, 1, 1, 1, 1, 1, 1, 1, 2}, want, where("rank 10")));
}

// After a refusal the workers are still in step: a good gather works.
void expect_still_gathers(UnevenGather& test, Strategy& strategy, int n) {
  const PerReplica<Tensor> ids = strategy.run([] {
    const int g = get_replica_context()->replica_id_in_sync_group();
    return Tensor(std::vector<std::int32_t>(static_cast<std::size_t>(rows_of(g)), g),
                  Shape{rows_of(g)});
  });
  std::vector<double> want;
  for (int g = 0; g < n; ++g)
    for (int i = 0; i < rows_of(g); ++i) want.push_back(g);
  EXPECT_TRUE(tensor_equals(strategy.gather(ids, 0), DataType::kInt32,
                            {static_cast<std::int64_t>(want.size())}, want,
                            test.where("the gather after a refusal")));
}

TEST_P(UnevenGather, OtherDimensionDiffersOnOneReplica) {
  if (n() == 1) GTEST_SKIP() << "one replica: nothing to disagree with";
  // The last replica (of the last worker) holds 4 columns, every other 3.
  // It is compared with its worker's first replica, and that one with
  // worker 0's: inside one worker the error is that worker's bad input
  // (InvalidArgumentError), between workers a MismatchError; either way
  // every worker raises it.
  const int last = n() - 1;
  const int reference = k() > 1 ? last - (k() - 1) : 0;
  const auto name = [&](int g) {
    if (workers_ == 1) return "local replica " + std::to_string(g);
    return "replica " + std::to_string(g) + " (worker " + std::to_string(g / k()) +
           ", local replica " + std::to_string(g % k()) + ")";
  };
  const std::string cause = name(last) + " holds Tensor(float32, [2, 4]) and " + name(reference) +
                            " holds Tensor(float32, [2, 3]), which cannot be concatenated along "
                            "axis 0";
  const PerReplica<Tensor> values = strategy().run([last] {
    const int g = get_replica_context()->replica_id_in_sync_group();
    return Tensor(DataType::kFloat32, {2, g == last ? 4 : 3});
  });
  const Tensor untouched;
  Tensor output;
  if (k() > 1) {
    EXPECT_TRUE(
        throws_with<InvalidArgumentError>([&] { output = strategy().gather(values, 0); }, cause))
        << where("Strategy::gather");
  } else {
    EXPECT_TRUE(throws_with<MismatchError>([&] { output = strategy().gather(values, 0); }, cause))
        << where("Strategy::gather");
  }
  EXPECT_TRUE(output.identical(untouched)) << where("no output was produced");
  // Inside run(): the same refusal, on every replica of every worker.
  EXPECT_TRUE(throws_with<Error>(
      [&] {
        (void)strategy().run([last] {
          ReplicaContext& context = *get_replica_context();
          const int g = context.replica_id_in_sync_group();
          return context.all_gather(Tensor(DataType::kFloat32, {2, g == last ? 4 : 3}), 0);
        });
      },
      cause))
      << where("ReplicaContext::all_gather");
  expect_still_gathers(*this, strategy(), n());
}

TEST_P(UnevenGather, DtypeOrAxisDiffersOnOneReplica) {
  if (n() == 1) GTEST_SKIP() << "one replica: nothing to disagree with";
  const int last = n() - 1;
  // Inside run(), the last replica passes int32 (the others float32): before
  // the replicas' values were compared across workers, this was refused
  // on the last worker only and its peers waited.
  EXPECT_TRUE(throws_with<Error>(
      [&] {
        (void)strategy().run([last] {
          ReplicaContext& context = *get_replica_context();
          const int g = context.replica_id_in_sync_group();
          return context.all_gather(
              Tensor(g == last ? DataType::kInt32 : DataType::kFloat32, {g % 3, 2}), 0);
        });
      },
      "a rank 2 int32 value along axis 0"))
      << where("dtype");
  // The last replica gathers along axis 1, the others along 0: values of
  // one shape, which would concatenate differently on different workers.
  EXPECT_TRUE(throws_with<Error>(
      [&] {
        (void)strategy().run([last] {
          ReplicaContext& context = *get_replica_context();
          const int g = context.replica_id_in_sync_group();
          return context.all_gather(Tensor(DataType::kFloat32, {2, 2}), g == last ? 1 : 0);
        });
      },
      "value along axis 1"))
      << where("axis");
  expect_still_gathers(*this, strategy(), n());
}

TEST_P(UnevenGather, WrongNumberOfValuesOnOneWorker) {
  // The last worker passes one value too many: refused on every worker.
  const bool mine = worker() == workers_ - 1;
  std::vector<Tensor> values(static_cast<std::size_t>(k() + (mine ? 1 : 0)),
                             Tensor(DataType::kFloat32, {1}));
  const std::string cause =
      (workers_ == 1 ? std::string("got ")
                     : "worker " + std::to_string(workers_ - 1) + " passed ") +
      std::to_string(k() + 1) + " per-replica values for " + std::to_string(k()) +
      " local replicas";
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { strategy().gather(PerReplica<Tensor>(values), 0); }, cause))
      << where("count");
  expect_still_gathers(*this, strategy(), n());
}

// More than 2^31 elements: worker 0 gives 2^31 + 3 uint8 rows, worker 1
// five (strategies_uneven_gather_large_np2, label "large"; rank 0 peaked at
// 8.4 GB resident, so it runs only when STRATEGIES_LARGE_GATHER=1).
TEST(LargeGather, MoreThan2To31Elements) {
  if (std::getenv("STRATEGIES_LARGE_GATHER") == nullptr) {
    GTEST_SKIP() << "set STRATEGIES_LARGE_GATHER=1 (strategies_uneven_gather_large_np2)";
  }
  if (world_size() != 2) GTEST_SKIP() << "runs at 2 ranks";
  CommunicationOptions options;
  options.timeout_seconds = 300;
  MultiWorkerMirroredStrategy strategy(options);
  const std::int64_t first_rows = (std::int64_t{1} << 31) + 3;
  const std::int64_t rows = world_rank() == 0 ? first_rows : 5;
  // Element i is i % 251. Filled and checked a block at a time from one
  // pattern (a period of 251 repeated, plus one period so that a block may
  // start at any phase): element by element these loops took 27 s.
  constexpr std::size_t kPeriod = 251;
  constexpr std::size_t kBlock = kPeriod * 4096;
  std::vector<std::uint8_t> pattern(kBlock + kPeriod);
  for (std::size_t k = 0; k < pattern.size(); ++k)
    pattern[k] = static_cast<std::uint8_t>(k % kPeriod);
  const auto from_pattern = [&](std::int64_t i) {
    return pattern.data() + static_cast<std::size_t>(i) % kPeriod;
  };
  Tensor mine(DataType::kUInt8, {rows});
  {
    std::span<std::uint8_t> values = mine.values<std::uint8_t>();
    const std::int64_t start = world_rank() == 0 ? 0 : first_rows;
    for (std::size_t i = 0; i < values.size(); i += kBlock) {
      const std::size_t length = std::min(kBlock, values.size() - i);
      std::memcpy(values.data() + i, from_pattern(start + static_cast<std::int64_t>(i)), length);
    }
  }
  const Tensor gathered = strategy.gather(PerReplica<Tensor>({mine}), 0);
  mine = Tensor();
  ASSERT_EQ(gathered.shape(), Shape{first_rows + 5}) << "worker " << world_rank();
  const std::span<const std::uint8_t> values = gathered.values<std::uint8_t>();
  for (std::size_t first = 0; first < values.size(); first += kBlock) {
    const std::size_t length = std::min(kBlock, values.size() - first);
    const std::uint8_t* want = from_pattern(static_cast<std::int64_t>(first));
    if (std::memcmp(values.data() + first, want, length) == 0) continue;
    for (std::size_t j = 0; j < length; ++j) {  // name the first wrong element
      ASSERT_EQ(values[first + j], want[j])
          << "worker " << world_rank() << ", index " << first + j << " expected " << int(want[j])
          << " actual " << int(values[first + j]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, UnevenGather,
                         ::testing::Values(Layout{false, 1, CommunicationImplementation::kAuto},
                                           Layout{false, 3, CommunicationImplementation::kAuto},
                                           Layout{true, 1, CommunicationImplementation::kAuto},
                                           Layout{true, 2, CommunicationImplementation::kAuto},
                                           Layout{true, 3, CommunicationImplementation::kAuto},
                                           Layout{true, 2, CommunicationImplementation::kRing}),
                         layout_name);

}  // namespace
}  // namespace collective::distribute
