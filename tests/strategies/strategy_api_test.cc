// The Strategy API under the default strategy, OneDeviceStrategy and
// MirroredStrategy with 1 to 4 replicas: contexts, run, reduce (with and
// without axis), local results, gather, ReplicaContext collectives and
// merge_call, mirrored variables and the optimizer. Expected values are
// exact (small integers).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "strategies_test_util.h"

namespace collective::distribute {
namespace {

using testing::floats;
using testing::tensor_equals;
using testing::throws_with;

TEST(DefaultStrategy, IsCurrentWhenNoneIsInScope) {
  Strategy& strategy = get_strategy();
  EXPECT_EQ(strategy.name(), "DefaultDistributionStrategy");
  EXPECT_FALSE(has_strategy());
  EXPECT_FALSE(in_cross_replica_context());
  ReplicaContext* context = get_replica_context();
  ASSERT_NE(context, nullptr);
  EXPECT_EQ(context->replica_id_in_sync_group(), 0);
  EXPECT_EQ(context->num_replicas_in_sync(), 1);
  EXPECT_EQ(&context->strategy(), &strategy);
  EXPECT_EQ(strategy.num_replicas_in_sync(), 1);
  EXPECT_EQ(strategy.cluster_resolver(), nullptr);
  EXPECT_EQ(&get_strategy(), &strategy);  // a singleton
}

TEST(DefaultStrategy, RunCallsTheFunctionOnTheCallersThread) {
  Strategy& strategy = get_strategy();
  const std::thread::id caller = std::this_thread::get_id();
  const PerReplica<int> result = strategy.run(
      [&](int x) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        EXPECT_NE(get_replica_context(), nullptr);
        EXPECT_FALSE(in_cross_replica_context());
        return x + 1;
      },
      41);
  ASSERT_EQ(result.num_replicas(), 1u);
  EXPECT_EQ(result[0], 42);
  // Reductions of one replica are the value itself.
  EXPECT_TRUE(tensor_equals(strategy.reduce(ReduceOp::kSum, floats({1, 2})), DataType::kFloat32,
                            {2}, {1, 2}));
  EXPECT_TRUE(tensor_equals(get_replica_context()->all_reduce(ReduceOp::kMean, floats({3})),
                            DataType::kFloat32, {1}, {3}));
}

// tf.distribute returns the plain value under one-replica strategies; the
// result of run() converts to it, and its members are reached with ->.
TEST(DefaultStrategy, RunResultIsThePlainValueUnderOneReplicaStrategies) {
  OneDeviceStrategy one("/cpu:0");
  MirroredStrategy single(MirroredStrategy::cpu_devices(1));
  for (Strategy* strategy :
       {&get_strategy(), static_cast<Strategy*>(&one), static_cast<Strategy*>(&single)}) {
    const Tensor loss = strategy->run([](float x) { return floats({x, 2 * x}); }, 1.5f);
    EXPECT_TRUE(
        tensor_equals(loss, DataType::kFloat32, {2}, {1.5, 3}, std::string(strategy->name())));
    const PerReplica<Tensor> kept = strategy->run([] { return floats({4}); });
    EXPECT_EQ(kept->num_elements(), 1u);
    const Tensor& view = kept;
    EXPECT_EQ(&view, &kept[0]);
    const int plus = strategy->run([](int x) { return x + 1; }, 41);
    EXPECT_EQ(plus, 42);
    // A function taking the value type accepts the result directly.
    const auto twice = [](const Tensor& t) { return t.values<float>()[0] * 2; };
    EXPECT_EQ(twice(strategy->run([] { return floats({5}); })), 10.0f);
  }
}

TEST(DefaultStrategy, ExperimentalSetStrategyAndLossReduction) {
  EXPECT_EQ(get_loss_reduction(), ReduceOp::kSum);
  MirroredStrategy first(MirroredStrategy::cpu_devices(2));
  OneDeviceStrategy second;
  experimental_set_strategy(&first);
  EXPECT_EQ(&get_strategy(), &first);
  EXPECT_TRUE(in_cross_replica_context());
  Variable v(floats({1}), {.name = "v"});
  EXPECT_TRUE(v.is_mirrored());
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        auto scope = first.scope();
        experimental_set_strategy(&second);
      },
      "must not be called inside a scope"));
  experimental_set_strategy(&second);  // replaces the first
  EXPECT_EQ(&get_strategy(), &second);
  experimental_set_strategy(nullptr);
  EXPECT_FALSE(has_strategy());
  experimental_set_strategy(nullptr);  // nothing set: no effect
  EXPECT_FALSE(has_strategy());
}

TEST(DefaultStrategy, ReplicaContextMergeCallEntersCrossReplicaContext) {
  const int result = get_replica_context()->merge_call([](Strategy& strategy) {
    EXPECT_TRUE(in_cross_replica_context());
    EXPECT_EQ(get_replica_context(), nullptr);
    return strategy.num_replicas_in_sync() * 10;
  });
  EXPECT_EQ(result, 10);
  EXPECT_FALSE(in_cross_replica_context());
}

TEST(DefaultStrategy, VariablesHaveOneCopyAndUpdateDirectly) {
  Variable v(floats({1, 2}), {.name = "v"});
  EXPECT_FALSE(v.is_mirrored());
  EXPECT_EQ(v.num_copies(), 1u);
  EXPECT_EQ(v.strategy_name(), "DefaultDistributionStrategy");
  v.assign_add(floats({10, 10}));
  EXPECT_TRUE(tensor_equals(v.value(), DataType::kFloat32, {2}, {11, 12}));
  get_strategy().run([&] { v.assign_sub(floats({1, 1})); });
  EXPECT_TRUE(tensor_equals(v.value(), DataType::kFloat32, {2}, {10, 11}));
}

TEST(OneDeviceStrategy, RunsOneReplicaOnItsDevice) {
  OneDeviceStrategy strategy("/cpu:0");
  EXPECT_EQ(strategy.name(), "OneDeviceStrategy");
  EXPECT_EQ(strategy.num_replicas_in_sync(), 1);
  EXPECT_EQ(strategy.extended().worker_devices(),
            std::vector<std::string>{"/job:localhost/replica:0/task:0/device:CPU:0"});
  auto scope = strategy.scope();
  EXPECT_TRUE(has_strategy());
  EXPECT_TRUE(in_cross_replica_context());
  EXPECT_EQ(get_replica_context(), nullptr);
  Variable v(floats({5}));
  EXPECT_FALSE(v.is_mirrored());
  const PerReplica<std::string> devices =
      strategy.run([] { return get_replica_context()->device(); });
  EXPECT_EQ(devices[0], "/job:localhost/replica:0/task:0/device:CPU:0");
  SGD sgd(0.5);
  strategy.run([&] { sgd.apply_gradients({{floats({2}), v}}); });
  EXPECT_TRUE(tensor_equals(v.value(), DataType::kFloat32, {1}, {4}));
  EXPECT_EQ(sgd.iterations(), 1);
}

class Mirrored : public ::testing::TestWithParam<int> {
 protected:
  int k() const { return GetParam(); }
  MirroredStrategy strategy{MirroredStrategy::cpu_devices(GetParam())};
};

TEST_P(Mirrored, DescribesItsReplicas) {
  EXPECT_EQ(strategy.name(), "MirroredStrategy");
  EXPECT_EQ(strategy.num_replicas_in_sync(), k());
  EXPECT_EQ(strategy.extended().num_local_replicas(), k());
  EXPECT_EQ(strategy.extended().num_workers(), 1);
  EXPECT_TRUE(strategy.extended().should_checkpoint());
  ASSERT_EQ(strategy.extended().worker_devices().size(), static_cast<std::size_t>(k()));
  EXPECT_EQ(strategy.extended().worker_devices().back(),
            "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(k() - 1));
  EXPECT_EQ(strategy.extended().cross_device_ops().name(), "ReductionToOneDevice");
  EXPECT_EQ(strategy.cluster_resolver(), nullptr);
}

TEST_P(Mirrored, RunGivesEachReplicaItsValueOnItsOwnThread) {
  std::vector<int> inputs;
  for (int r = 0; r < k(); ++r) inputs.push_back(100 * r);
  const PerReplica<int> per_replica(inputs);
  std::mutex mutex;
  std::set<std::thread::id> threads;
  const int shared = 7;
  const PerReplica<int> result = strategy.run(
      [&](int value, const int& common) {
        ReplicaContext* context = get_replica_context();
        EXPECT_NE(context, nullptr);
        EXPECT_EQ(&get_strategy(), &strategy);
        EXPECT_FALSE(in_cross_replica_context());
        {
          std::lock_guard<std::mutex> lock(mutex);
          threads.insert(std::this_thread::get_id());
        }
        return value + context->replica_id_in_sync_group() + common;
      },
      per_replica, shared);
  EXPECT_EQ(threads.size(), static_cast<std::size_t>(k()));
  const std::vector<int> local = strategy.experimental_local_results(result);
  ASSERT_EQ(local.size(), static_cast<std::size_t>(k()));
  for (int r = 0; r < k(); ++r)
    EXPECT_EQ(local[static_cast<std::size_t>(r)], 101 * r + 7) << "replica " << r;
}

TEST_P(Mirrored, ReduceEveryOp) {
  const PerReplica<Tensor> values = strategy.run([] {
    const int id = get_replica_context()->replica_id_in_sync_group();
    return floats({static_cast<float>(id + 1), static_cast<float>(-2 * id)});
  });
  double sum0 = 0, sum1 = 0, prod0 = 1;
  for (int r = 0; r < k(); ++r) {
    sum0 += r + 1;
    sum1 += -2 * r;
    prod0 *= r + 1;
  }
  EXPECT_TRUE(tensor_equals(strategy.reduce(ReduceOp::kSum, values), DataType::kFloat32, {2},
                            {sum0, sum1}));
  EXPECT_TRUE(tensor_equals(strategy.reduce(ReduceOp::kMean, values), DataType::kFloat32, {2},
                            {static_cast<float>(sum0 / k()), static_cast<float>(sum1 / k())}));
  EXPECT_TRUE(tensor_equals(strategy.reduce(ReduceOp::kMax, values), DataType::kFloat32, {2},
                            {double(k()), 0}));
  EXPECT_TRUE(tensor_equals(strategy.reduce(ReduceOp::kMin, values), DataType::kFloat32, {2},
                            {1, -2.0 * (k() - 1)}));
  EXPECT_TRUE(tensor_equals(strategy.reduce(ReduceOp::kProd, values), DataType::kFloat32, {2},
                            {prod0, 0.0}));
}

TEST_P(Mirrored, ReduceAlongAnAxisWeighsEveryElement) {
  // Replica r holds r + 1 rows of [r, 1]: the mean along axis 0 over all
  // replicas is the mean of all rows, not the mean of the replicas' means.
  const PerReplica<Tensor> values = strategy.run([] {
    const int id = get_replica_context()->replica_id_in_sync_group();
    std::vector<float> rows;
    for (int i = 0; i <= id; ++i) {
      rows.push_back(static_cast<float>(id));
      rows.push_back(1);
    }
    return Tensor(rows, Shape{id + 1, 2});
  });
  double total_rows = 0, weighted = 0;
  for (int r = 0; r < k(); ++r) {
    total_rows += r + 1;
    weighted += r * (r + 1);
  }
  EXPECT_TRUE(tensor_equals(strategy.reduce(ReduceOp::kSum, values, 0), DataType::kFloat32, {2},
                            {weighted, total_rows}));
  EXPECT_TRUE(tensor_equals(strategy.reduce(ReduceOp::kMean, values, 0), DataType::kFloat32, {2},
                            {static_cast<float>(weighted / total_rows), 1}));
  EXPECT_TRUE(tensor_equals(strategy.reduce(ReduceOp::kMax, values, -2), DataType::kFloat32, {2},
                            {double(k() - 1), 1}));
}

TEST_P(Mirrored, ReduceOfANonDistributedValue) {
  EXPECT_TRUE(tensor_equals(strategy.reduce(ReduceOp::kMean, floats({3, 4})), DataType::kFloat32,
                            {2}, {3, 4}));
  if (k() > 1) {
    EXPECT_TRUE(throws_with<InvalidArgumentError>(
        [&] { strategy.reduce(ReduceOp::kSum, floats({3})); }, "not distributed"));
  } else {
    EXPECT_TRUE(
        tensor_equals(strategy.reduce(ReduceOp::kSum, floats({3})), DataType::kFloat32, {1}, {3}));
  }
}

TEST_P(Mirrored, GatherConcatenatesInReplicaOrder) {
  // Replica r contributes r + 1 rows of value r, along axis 0, and a [2, r+1]
  // block along axis 1.
  const PerReplica<Tensor> rows = strategy.run([] {
    const int id = get_replica_context()->replica_id_in_sync_group();
    return Tensor(std::vector<std::int32_t>(static_cast<std::size_t>(id + 1), id), Shape{id + 1});
  });
  std::vector<double> want;
  for (int r = 0; r < k(); ++r)
    for (int i = 0; i <= r; ++i) want.push_back(r);
  EXPECT_TRUE(tensor_equals(strategy.gather(rows, 0), DataType::kInt32,
                            {static_cast<std::int64_t>(want.size())}, want));

  const PerReplica<Tensor> columns = strategy.run([] {
    const int id = get_replica_context()->replica_id_in_sync_group();
    std::vector<double> v;
    for (int row = 0; row < 2; ++row)
      for (int c = 0; c <= id; ++c) v.push_back(row * 10 + id);
    return Tensor::from_doubles(DataType::kFloat64, v, {2, id + 1});
  });
  std::vector<double> want2;
  for (int row = 0; row < 2; ++row) {
    for (int r = 0; r < k(); ++r)
      for (int c = 0; c <= r; ++c) want2.push_back(row * 10 + r);
  }
  const auto width = static_cast<std::int64_t>(want2.size() / 2);
  EXPECT_TRUE(tensor_equals(strategy.gather(columns, 1), DataType::kFloat64, {2, width}, want2));
  // The same through the replica context.
  const PerReplica<Tensor> inside = strategy.run([] {
    const int id = get_replica_context()->replica_id_in_sync_group();
    return get_replica_context()->all_gather(
        Tensor(std::vector<std::int32_t>(static_cast<std::size_t>(id + 1), id), Shape{id + 1}), 0);
  });
  for (const Tensor& t : inside.values()) {
    EXPECT_TRUE(tensor_equals(t, DataType::kInt32, {static_cast<std::int64_t>(want.size())}, want));
  }
}

TEST_P(Mirrored, ReplicaContextAllReduceOneAndMany) {
  const PerReplica<std::vector<Tensor>> results = strategy.run([] {
    ReplicaContext& context = *get_replica_context();
    const float id = static_cast<float>(context.replica_id_in_sync_group());
    const Tensor single = context.all_reduce(ReduceOp::kSum, floats({id, 1}));
    std::vector<Tensor> many = context.all_reduce(
        ReduceOp::kMax,
        {floats({id}), Tensor(std::vector<std::int64_t>{static_cast<std::int64_t>(-id)}, {1}),
         Tensor(DataType::kFloat16, {0})});
    many.insert(many.begin(), single);
    return many;
  });
  double ids = 0;
  for (int r = 0; r < k(); ++r) ids += r;
  for (const std::vector<Tensor>& replica : results.values()) {
    ASSERT_EQ(replica.size(), 4u);
    EXPECT_TRUE(tensor_equals(replica[0], DataType::kFloat32, {2}, {ids, double(k())}));
    EXPECT_TRUE(tensor_equals(replica[1], DataType::kFloat32, {1}, {double(k() - 1)}));
    EXPECT_TRUE(tensor_equals(replica[2], DataType::kInt64, {1}, {0}));
    EXPECT_EQ(replica[3].num_elements(), 0u);
  }
}

TEST_P(Mirrored, MergeCallRunsOnceInTheCrossReplicaContext) {
  std::atomic<int> calls{0};
  const PerReplica<int> results = strategy.run([&] {
    ReplicaContext& context = *get_replica_context();
    const int id = context.replica_id_in_sync_group();
    // With an argument: every replica's value arrives as one PerReplica.
    const int total = context.merge_call(
        [&](Strategy& s, const PerReplica<int>& ids) {
          ++calls;
          EXPECT_EQ(&s, &strategy);
          EXPECT_TRUE(in_cross_replica_context());
          EXPECT_EQ(get_replica_context(), nullptr);
          int sum = 0;
          for (int v : ids.values()) sum += v;
          return sum;
        },
        id);
    // A PerReplica result is unpacked: each replica gets its own value.
    const int own = context.merge_call([&](Strategy&) {
      std::vector<int> values;
      for (int r = 0; r < k(); ++r) values.push_back(1000 + r);
      return PerReplica<int>(values);
    });
    context.merge_call([&](Strategy&) { ++calls; });
    EXPECT_FALSE(in_cross_replica_context());
    return total * 10000 + own;
  });
  EXPECT_EQ(calls.load(), 2);
  const int ids = k() * (k() - 1) / 2;
  for (int r = 0; r < k(); ++r)
    EXPECT_EQ(results[static_cast<std::size_t>(r)], ids * 10000 + 1000 + r);
}

TEST_P(Mirrored, VariablesAreMirroredAndUpdatedIdentically) {
  auto scope = strategy.scope();
  EXPECT_TRUE(has_strategy());
  EXPECT_TRUE(in_cross_replica_context());
  Variable v(floats({1, 2}), {.name = "v", .aggregation = VariableAggregation::kSum});
  EXPECT_TRUE(v.is_mirrored());
  EXPECT_EQ(v.num_copies(), static_cast<std::size_t>(k()));
  EXPECT_EQ(strategy.experimental_local_results(v).size(), static_cast<std::size_t>(k()));

  // Cross-replica: applied to every copy as given.
  v.assign_add(floats({1, 1}));
  // Replica context, SUM aggregation: every replica's update is summed.
  strategy.run([&] {
    const float id = static_cast<float>(get_replica_context()->replica_id_in_sync_group());
    v.assign_add(floats({id, 1}));
  });
  double ids = 0;
  for (int r = 0; r < k(); ++r) ids += r;
  for (const Tensor& copy : v.local_values()) {
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {2}, {2 + ids, 3.0 + k()}));
  }
  // Each replica reads its own copy (all identical).
  const PerReplica<Tensor> reads = strategy.run([&] { return v.value(); });
  for (const Tensor& read : reads.values()) EXPECT_TRUE(read.identical(v.value()));

  Variable mean(floats({0}), {.name = "mean", .aggregation = VariableAggregation::kMean});
  Variable first(floats({0}),
                 {.name = "first", .aggregation = VariableAggregation::kOnlyFirstReplica});
  strategy.run([&] {
    const float id = static_cast<float>(get_replica_context()->replica_id_in_sync_group());
    mean.assign(floats({2 * id}));
    first.assign(floats({id + 5}));
  });
  for (const Tensor& copy : mean.local_values()) {
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {1}, {static_cast<float>(2 * ids / k())}));
  }
  for (const Tensor& copy : first.local_values())
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {1}, {5}));
}

TEST_P(Mirrored, VariableCreatedInsideRunIsOneVariable) {
  auto scope = strategy.scope();
  const PerReplica<Variable> created = strategy.run([] {
    const float id = static_cast<float>(get_replica_context()->replica_id_in_sync_group());
    return Variable(floats({id + 3}), {.name = "made_inside"});
  });
  for (const Variable& v : created.values()) {
    EXPECT_TRUE(v.same_variable(created[0]));
    // Initialised from replica 0's value.
    EXPECT_TRUE(tensor_equals(v.value(), DataType::kFloat32, {1}, {3}));
  }
  EXPECT_EQ(created[0].num_copies(), static_cast<std::size_t>(k()));
}

TEST_P(Mirrored, SgdSumsGradientsOverReplicas) {
  auto scope = strategy.scope();
  Variable w(floats({0, 0, 0}), {.name = "w"});
  Variable b(Tensor::from_doubles(DataType::kFloat64, {1}, {1}), {.name = "b"});
  SGD sgd(0.5);
  for (int step = 1; step <= 3; ++step) {
    strategy.run([&] {
      const float id = static_cast<float>(get_replica_context()->replica_id_in_sync_group());
      sgd.apply_gradients(
          {{floats({id + 1, 2, -4}), w}, {Tensor::from_doubles(DataType::kFloat64, {1}, {1}), b}});
    });
  }
  const double sum = k() * (k() + 1) / 2.0;
  for (const Tensor& copy : w.local_values()) {
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {3}, {-1.5 * sum, -3.0 * k(), 6.0 * k()}));
  }
  for (const Tensor& copy : b.local_values()) {
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat64, {1}, {1 - 1.5 * k()}));
  }
  EXPECT_EQ(sgd.iterations(), 3);
  // Without aggregation the gradients are taken as already summed.
  strategy.run([&] { sgd.apply_gradients({{floats({2, 2, 2}), w}}, false); });
  for (const Tensor& copy : w.local_values()) {
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {3},
                              {-1.5 * sum - 1, -3.0 * k() - 1, 6.0 * k() - 1}));
  }
}

TEST_P(Mirrored, ExtendedUpdateAndReduceTo) {
  auto scope = strategy.scope();
  Variable v(floats({1}));
  strategy.extended().update(v, [](Tensor& copy) { copy.values<float>()[0] *= 3; });
  for (const Tensor& copy : v.local_values())
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {1}, {3}));
  const PerReplica<Tensor> ones = strategy.run([] { return floats({1}); });
  EXPECT_TRUE(tensor_equals(strategy.extended().reduce_to(ReduceOp::kSum, ones), DataType::kFloat32,
                            {1}, {double(k())}));
  const std::vector<Tensor> both =
      strategy.extended().batch_reduce_to(ReduceOp::kSum, {ones, ones});
  EXPECT_TRUE(tensor_equals(both[1], DataType::kFloat32, {1}, {double(k())}));
}

TEST_P(Mirrored, AReplicasErrorReachesTheCallerAndReleasesTheOthers) {
  // Replica 0 (or the only one) throws before the collective the others
  // wait in; run() rethrows replica 0's own error, promptly.
  EXPECT_TRUE(throws_with<std::runtime_error>(
      [&] {
        strategy.run([] {
          ReplicaContext& context = *get_replica_context();
          if (context.replica_id_in_sync_group() == 0)
            throw std::runtime_error("replica zero broke");
          context.all_reduce(ReduceOp::kSum, floats({1}));
        });
      },
      "replica zero broke"));
  // The strategy is usable afterwards.
  const PerReplica<Tensor> ok =
      strategy.run([] { return get_replica_context()->all_reduce(ReduceOp::kSum, floats({1})); });
  EXPECT_TRUE(tensor_equals(ok[0], DataType::kFloat32, {1}, {double(k())}));
}

TEST_P(Mirrored, ReplicasMakingDifferentCallsGetAMismatchError) {
  if (k() == 1) GTEST_SKIP() << "needs two replicas";
  EXPECT_TRUE(throws_with<MismatchError>(
      [&] {
        strategy.run([] {
          ReplicaContext& context = *get_replica_context();
          const float n = static_cast<float>(context.replica_id_in_sync_group() + 1);
          context.all_reduce(ReduceOp::kSum,
                             Tensor(std::vector<float>(static_cast<std::size_t>(n), 1),
                                    {static_cast<std::int64_t>(n)}));
        });
      },
      "different collective calls"));
  EXPECT_TRUE(throws_with<MismatchError>(
      [&] {
        strategy.run([] {
          ReplicaContext& context = *get_replica_context();
          if (context.replica_id_in_sync_group() != 0)
            context.all_reduce(ReduceOp::kSum, floats({1}));
        });
      },
      "every replica must make the same collective calls"));
}

TEST_P(Mirrored, OtherCrossDeviceOps) {
  for (std::shared_ptr<CrossDeviceOps> ops : std::vector<std::shared_ptr<CrossDeviceOps>>{
           std::make_shared<HierarchicalCopyAllReduce>(2), std::make_shared<NcclAllReduce>()}) {
    MirroredStrategy other(MirroredStrategy::cpu_devices(k()), ops);
    EXPECT_EQ(other.extended().cross_device_ops().name(), ops->name());
    const PerReplica<Tensor> values = other.run([] {
      const float id = static_cast<float>(get_replica_context()->replica_id_in_sync_group());
      return get_replica_context()
          ->all_reduce(ReduceOp::kSum, {floats({id, 1}), floats({2})})
          .front();
    });
    double ids = 0;
    for (int r = 0; r < k(); ++r) ids += r;
    for (const Tensor& t : values.values())
      EXPECT_TRUE(tensor_equals(t, DataType::kFloat32, {2}, {ids, double(k())}));
  }
}

// A variable shares its strategy's state: its cross-replica read and
// update (a sync-on-read variable reduces its copies) work after the
// strategy object is gone.
TEST(VariableOwnership, SyncOnReadVariableOutlivesItsStrategy) {
  std::optional<SyncOnReadVariable> total;
  {
    MirroredStrategy strategy(MirroredStrategy::cpu_devices(3));
    auto scope = strategy.scope();
    total.emplace(floats({0, 0}),
                  VariableOptions{.name = "total", .aggregation = VariableAggregation::kSum});
    strategy.run([&] {
      const float id = static_cast<float>(get_replica_context()->replica_id_in_sync_group());
      total->assign_add(floats({id + 1, 1}));
      return Tensor();
    });
  }
  EXPECT_TRUE(tensor_equals(total->value(), DataType::kFloat32, {2}, {6, 3}, "after the strategy"));
  total->assign(floats({9, 3}));  // each copy gets a third
  const std::vector<Tensor> copies = total->local_values();
  ASSERT_EQ(copies.size(), 3u);
  for (std::size_t r = 0; r < copies.size(); ++r) {
    EXPECT_TRUE(
        tensor_equals(copies[r], DataType::kFloat32, {2}, {3, 1}, "copy " + std::to_string(r)));
  }
  EXPECT_TRUE(tensor_equals(total->value(), DataType::kFloat32, {2}, {9, 3}, "after assign"));
}

// Sync-on-read: each replica accumulates into its own copy with no
// communication; a cross-replica read reduces by the aggregation.
TEST_P(Mirrored, SyncOnReadVariablesAccumulatePerReplicaAndReduceOnRead) {
  auto scope = strategy.scope();
  SyncOnReadVariable total(floats({0, 0}),
                           {.name = "total", .aggregation = VariableAggregation::kSum});
  Variable mean(floats({0}), {.name = "mean",
                              .aggregation = VariableAggregation::kMean,
                              .synchronization = VariableSynchronization::kOnRead});
  SyncOnReadVariable first(
      floats({0}), {.name = "first", .aggregation = VariableAggregation::kOnlyFirstReplica});
  SyncOnReadVariable none(floats({0}), {.name = "none"});
  EXPECT_TRUE(total.is_sync_on_read());
  EXPECT_EQ(mean.synchronization(), VariableSynchronization::kOnRead);
  EXPECT_FALSE(total.is_mirrored());
  EXPECT_EQ(total.num_copies(), static_cast<std::size_t>(k()));
  for (int step = 0; step < 2; ++step) {
    const PerReplica<Tensor> own = strategy.run([&] {
      const float id = static_cast<float>(get_replica_context()->replica_id_in_sync_group());
      total.assign_add(floats({id + 1, 1}));
      mean.assign_add(floats({2 * id}));
      first.assign_add(floats({id + 10}));
      none.assign_add(floats({1}));
      return total.value();  // the replica's own copy
    });
    for (int r = 0; r < k(); ++r) {
      EXPECT_TRUE(tensor_equals(own[static_cast<std::size_t>(r)], DataType::kFloat32, {2},
                                {double((step + 1) * (r + 1)), double(step + 1)},
                                "replica " + std::to_string(r)));
    }
  }
  const std::vector<Tensor> copies = total.local_values();
  for (int r = 0; r < k(); ++r) {
    EXPECT_TRUE(tensor_equals(copies[static_cast<std::size_t>(r)], DataType::kFloat32, {2},
                              {2.0 * (r + 1), 2}));
  }
  const double ids = k() * (k() - 1) / 2.0;
  EXPECT_TRUE(tensor_equals(total.value(), DataType::kFloat32, {2}, {2 * (ids + k()), 2.0 * k()}));
  EXPECT_TRUE(tensor_equals(mean.value(), DataType::kFloat32, {1}, {4 * ids / k()}));
  EXPECT_TRUE(tensor_equals(first.value(), DataType::kFloat32, {1}, {20}));
  if (k() > 1) {
    EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { (void)none.value(); }, "aggregation NONE"));
    EXPECT_TRUE(throws_with<InvalidArgumentError>(
        [&] {
          total.assign_add(floats({1, 1}));
        },
        "cannot be updated by assign_add in the cross-replica"));
  } else {
    EXPECT_TRUE(tensor_equals(none.value(), DataType::kFloat32, {1}, {2}));
  }
  // A cross-replica assign of a SUM variable spreads the value so the read
  // gives it back (a metric's reset): each copy holds value / replicas.
  total.assign(floats({0, 4.0f * static_cast<float>(k())}));
  for (const Tensor& copy : total.local_values())
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {2}, {0, 4}));
  EXPECT_TRUE(tensor_equals(total.value(), DataType::kFloat32, {2}, {0, 4.0 * k()}));
  mean.assign(floats({3}));
  EXPECT_TRUE(tensor_equals(mean.value(), DataType::kFloat32, {1}, {3}));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] {
        SyncOnReadVariable bad(floats({0}), {.synchronization = VariableSynchronization::kOnWrite});
      },
      "a SyncOnReadVariable is ON_READ"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] { Variable bad(floats({0}), {.synchronization = VariableSynchronization::kNone}); },
      "synchronization NONE is not supported under MirroredStrategy"));
}

// The StrategyExtended members the guide names.
TEST_P(Mirrored, ExtendedUpdateBroadcastColocationAndContainers) {
  OneDeviceStrategy other;
  Variable foreign = [&] {
    auto scope = other.scope();
    return Variable(floats({0}), {.name = "foreign"});
  }();
  auto scope = strategy.scope();
  Variable w(floats({1, 2}), {.name = "w"});
  StrategyExtended& extended = strategy.extended();
  EXPECT_TRUE(extended.variable_created_in_scope(w));
  EXPECT_FALSE(extended.variable_created_in_scope(foreign));
  EXPECT_TRUE(extended.value_container(w).same_variable(w));
  const distribute::Mirrored<Tensor> copies = extended.broadcast_to(floats({7}));
  ASSERT_EQ(copies.num_replicas(), static_cast<std::size_t>(k()));
  for (const Tensor& copy : copies.values())
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {1}, {7}));
  EXPECT_EQ(extended.broadcast_to(floats({7}), w).num_replicas(), w.num_copies());
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { (void)extended.broadcast_to(floats({7}), foreign); }, "destinations"));
  // update with arguments: a Mirrored argument gives each copy its
  // component, a plain one is passed as is; results come one per copy.
  const distribute::Mirrored<Tensor> deltas = extended.broadcast_to(floats({10, 20}), w);
  const distribute::Mirrored<double> sums = extended.update(
      w,
      [](Tensor& copy, const Tensor& delta, double scale) {
        for (std::size_t i = 0; i < 2; ++i)
          copy.values<float>()[i] += static_cast<float>(scale) * delta.values<float>()[i];
        return double(copy.values<float>()[0] + copy.values<float>()[1]);
      },
      deltas, 0.5);
  ASSERT_EQ(sums.num_replicas(), static_cast<std::size_t>(k()));
  for (double sum : sums.values()) EXPECT_EQ(sum, 18.0);
  for (const Tensor& copy : w.local_values())
    EXPECT_TRUE(tensor_equals(copy, DataType::kFloat32, {2}, {6, 12}));
  extended.update(
      w, [](Tensor& copy, const Tensor& value) { copy = value; }, floats({0, 1}));
  EXPECT_TRUE(tensor_equals(w.value(), DataType::kFloat32, {2}, {0, 1}));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        extended.update(
            w, [](Tensor&, const Tensor&) {},
            PerReplica<Tensor>(std::vector<Tensor>(static_cast<std::size_t>(k()) + 1)));
      },
      "one value per copy"));
  {
    auto colocated = extended.colocate_vars_with(w);
    Variable v(floats({3}), {.name = "v"});
    EXPECT_EQ(v.num_copies(), w.num_copies());
  }
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { auto bad = extended.colocate_vars_with(foreign); }, "colocate_vars_with"));
}

INSTANTIATE_TEST_SUITE_P(Replicas, Mirrored, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return "x" + std::to_string(info.param); });

TEST(MirroredStrategyDevices, DefaultsAndNames) {
  MirroredStrategy one;
  EXPECT_EQ(one.num_replicas_in_sync(), 1);
  MirroredStrategy named({"/device:CPU:3", "/job:localhost/replica:0/task:0/device:CPU:1"});
  EXPECT_EQ(named.extended().worker_devices(),
            (std::vector<std::string>{"/job:localhost/replica:0/task:0/device:CPU:3",
                                      "/job:localhost/replica:0/task:0/device:CPU:1"}));
}

}  // namespace
}  // namespace collective::distribute
