// Misuse gets tf.distribute's clear errors, raised before anything runs:
// mixing strategies' scopes, merge_call outside its replica context, a
// variable of another strategy inside run(), cross-replica calls inside
// run(), bad devices and bad arguments.
#include <gtest/gtest.h>

#include "strategies_test_util.h"

namespace collective::distribute {
namespace {

using testing::floats;
using testing::throws_with;

TEST(Misuse, MixingScopesOfDifferentStrategies) {
  MirroredStrategy first(MirroredStrategy::cpu_devices(2));
  OneDeviceStrategy second;
  auto scope = first.scope();
  EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { auto inner = second.scope(); },
                                                "mixing different strategies"));
  // The failed scope left nothing behind, and nesting the same strategy is fine.
  EXPECT_EQ(&get_strategy(), &first);
  {
    auto again = first.scope();
    EXPECT_EQ(&get_strategy(), &first);
  }
  EXPECT_EQ(&get_strategy(), &first);
  // run() of another strategy inside this scope.
  EXPECT_TRUE(
      throws_with<InvalidArgumentError>([&] { second.run([] {}); }, "mixing different strategies"));
}

TEST(Misuse, ScopeOfAnotherStrategyInsideRun) {
  MirroredStrategy strategy(MirroredStrategy::cpu_devices(2));
  OneDeviceStrategy other;
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { strategy.run([&] { auto scope = other.scope(); }); }, "inside a replica context of"));
  // Its own scope inside run keeps the replica context.
  strategy.run([&] {
    auto scope = strategy.scope();
    EXPECT_NE(get_replica_context(), nullptr);
  });
}

TEST(Misuse, MergeCallOutsideItsReplicaContext) {
  MirroredStrategy strategy(MirroredStrategy::cpu_devices(2));
  std::vector<ReplicaContext*> kept(2);
  strategy.run([&] {
    ReplicaContext* context = get_replica_context();
    kept[static_cast<std::size_t>(context->local_replica_id())] = context;
  });
  // After run() returned, in the cross-replica context.
  auto scope = strategy.scope();
  EXPECT_EQ(get_replica_context(), nullptr);
  EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { kept[0]->merge_call([](Strategy&) {}); },
                                                "not the current replica context"));
  // Inside a merge function (cross-replica context), a nested merge_call.
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        strategy.run([] {
          ReplicaContext* context = get_replica_context();
          context->merge_call([context](Strategy&) { context->merge_call([](Strategy&) {}); });
        });
      },
      "not the current replica context"));
  // Another replica's context.
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        strategy.run([&] {
          ReplicaContext* context = get_replica_context();
          ReplicaContext* other = kept[1 - static_cast<std::size_t>(context->local_replica_id())];
          other->all_reduce(ReduceOp::kSum, floats({1}));
        });
      },
      "not the current replica context"));
}

// merge_fn's PerReplica result gives each local replica its own value: one
// of another size is refused on every replica, naming both sizes (it once
// indexed past the result's end).
TEST(Misuse, MergeCallResultOfTheWrongSize) {
  for (const int replicas : {1, 2, 3}) {
    MirroredStrategy strategy(MirroredStrategy::cpu_devices(replicas));
    for (const int returned : {0, replicas - 1, replicas + 1}) {
      if (returned < 0 || returned == replicas) continue;
      const std::string sizes = "merge_fn returned a PerReplica of " + std::to_string(returned) +
                                " values, but there are " + std::to_string(replicas) +
                                " local replicas";
      EXPECT_TRUE(throws_with<InvalidArgumentError>(
          [&] {
            strategy.run([&] {
              get_replica_context()->merge_call([&](Strategy&) {
                return PerReplica<Tensor>(
                    std::vector<Tensor>(static_cast<std::size_t>(returned), floats({1})));
              });
            });
          },
          sizes))
          << replicas << " replicas, " << returned << " values";
      EXPECT_TRUE(throws_with<InvalidArgumentError>(
          [&] {
            strategy.run([&] {
              get_replica_context()->merge_call(
                  [&](Strategy&, const PerReplica<Tensor>& values) {
                    std::vector<Tensor> out(values.values());
                    out.resize(static_cast<std::size_t>(returned), floats({2}));
                    return PerReplica<Tensor>(std::move(out));
                  },
                  floats({3}));
            });
          },
          "ReplicaContext.merge_call"))
          << replicas << " replicas, " << returned << " values";
    }
    // The right size still gives each replica its own value.
    const PerReplica<Tensor> own = strategy.run([&] {
      return get_replica_context()->merge_call([&](Strategy&) {
        std::vector<Tensor> values;
        for (int r = 0; r < replicas; ++r) values.push_back(floats({static_cast<float>(r)}));
        return PerReplica<Tensor>(std::move(values));
      });
    });
    for (int r = 0; r < replicas; ++r) {
      EXPECT_TRUE(testing::tensor_equals(own[static_cast<std::size_t>(r)], DataType::kFloat32, {1},
                                         {static_cast<double>(r)}, "replica " + std::to_string(r)));
    }
  }
  // The default strategy (one replica, no run()).
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] {
        get_replica_context()->merge_call(
            [](Strategy&) { return PerReplica<Tensor>(std::vector<Tensor>{}); });
      },
      "PerReplica of 0 values, but there are 1 local replicas"));
}

TEST(Misuse, VariableOfAnotherStrategyInsideRun) {
  MirroredStrategy owner(MirroredStrategy::cpu_devices(2));
  MirroredStrategy runner(MirroredStrategy::cpu_devices(2));
  std::optional<Variable> v;
  {
    auto scope = owner.scope();
    v.emplace(floats({1}), VariableOptions{.name = "w"});
  }
  // As an argument of run().
  EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { runner.run([](Variable&) {}, *v); },
                                                "variable 'w', created under MirroredStrategy"));
  // Captured by the replica function.
  EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { runner.run([&] { (void)v->value(); }); },
                                                "but is used inside run() of MirroredStrategy"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { runner.run([&] {
              SGD(0.1).apply_gradients({{floats({1}), *v}});
            }); },
      "is used inside run()"));
  // A variable made without any strategy belongs to the default strategy.
  Variable plain(floats({1}), {.name = "plain"});
  EXPECT_TRUE(
      throws_with<InvalidArgumentError>([&] { runner.run([&] { plain.assign(floats({2})); }); },
                                        "created under DefaultDistributionStrategy"));
  // The owner may use it, of course.
  owner.run([&] { (void)v->value(); });
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { runner.extended().update(*v, [](Tensor&) {}); }, "belongs to MirroredStrategy"));
}

TEST(Misuse, UpdatingAVariableWithoutAggregationInAReplicaContext) {
  MirroredStrategy strategy(MirroredStrategy::cpu_devices(2));
  auto scope = strategy.scope();
  Variable v(floats({1}), {.name = "counter"});
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { strategy.run([&] { v.assign_add(floats({1})); }); }, "aggregation is NONE"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        v.assign(floats({1, 2}));
      },
      "the value is Tensor(float32, [2])"));
}

TEST(Misuse, CrossReplicaCallsInsideRun) {
  MirroredStrategy strategy(MirroredStrategy::cpu_devices(2));
  const PerReplica<Tensor> values({floats({1}), floats({2})});
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { strategy.run([&] { strategy.reduce(ReduceOp::kSum, values); }); },
      "cross-replica context"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { strategy.run([&] { strategy.gather(values, 0); }); }, "cross-replica context"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { strategy.run([&] { strategy.extended().reduce_to(ReduceOp::kSum, values); }); },
      "cross-replica context"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { strategy.run([&] { strategy.run([] {}); }); },
                                                "inside another run()"));
  const DistributedDataset data =
      strategy.experimental_distribute_dataset(Dataset::range(4).batch(2));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { strategy.run([&] { (void)data.make_iterator().get_next(); }); }, "not inside run()"));
}

TEST(Misuse, BadRunArguments) {
  MirroredStrategy strategy(MirroredStrategy::cpu_devices(2));
  const PerReplica<int> three({1, 2, 3});
  EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { strategy.run([](int) {}, three); },
                                                "3 per-replica values, but the strategy has 2"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] { strategy.reduce(ReduceOp::kSum, PerReplica<Tensor>({floats({1})})); },
      "has 2 local replicas"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        strategy.reduce(ReduceOp::kSum, PerReplica<Tensor>({floats({1}), floats({1, 2})}));
      },
      "local replica 1 holds Tensor(float32, [2])"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        strategy.reduce(ReduceOp::kSum, PerReplica<Tensor>({floats({1}), floats({1})}), 1);
      },
      "axis 1 is out of range"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        strategy.gather(PerReplica<Tensor>({floats({1}), Tensor(DataType::kFloat32, {1, 1})}), 0);
      },
      "cannot be concatenated"));
}

TEST(Misuse, BadDevices) {
  EXPECT_TRUE(throws_with<UnsupportedError>([] { MirroredStrategy({"/gpu:0"}); }, "is a GPU"));
  EXPECT_TRUE(
      throws_with<UnsupportedError>([] { OneDeviceStrategy("/device:GPU:1"); }, "is a GPU"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] {
        MirroredStrategy({"/cpu:0", "/CPU:0"});
      },
      "listed twice"));
  EXPECT_TRUE(
      throws_with<InvalidArgumentError>([] { MirroredStrategy({"/tpu:0"}); }, "not a device name"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>([] { MirroredStrategy({"/cpu:x"}); }, "no valid"));
  EXPECT_TRUE(
      throws_with<InvalidArgumentError>([] { MirroredStrategy::cpu_devices(0); }, "at least one"));
}

TEST(Misuse, BadOptimizerInput) {
  EXPECT_TRUE(throws_with<InvalidArgumentError>([] { SGD(0); }, "learning_rate"));
  Variable v(floats({1, 2}), {.name = "w"});
  Variable n(Tensor(std::vector<std::int32_t>{1}, {1}), {.name = "n"});
  SGD sgd(0.1);
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        sgd.apply_gradients({{floats({1}), v}});
      },
      "gradient 0 is Tensor(float32, [1])"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        sgd.apply_gradients({{Tensor(std::vector<std::int32_t>{1}, {1}), n}});
      },
      "floating type"));
}

// Keras raises for apply_gradients in the cross-replica context; the
// variable is left as it was. Outside every scope (the default strategy's
// replica context) and inside run() it applies.
TEST(Misuse, ApplyGradientsInTheCrossReplicaContext) {
  MirroredStrategy mirrored(MirroredStrategy::cpu_devices(2));
  OneDeviceStrategy one;
  for (Strategy* strategy : {static_cast<Strategy*>(&mirrored), static_cast<Strategy*>(&one)}) {
    SGD sgd(0.5);
    auto scope = strategy->scope();
    Variable v(floats({1, 2}), {.name = "v"});
    EXPECT_TRUE(throws_with<InvalidArgumentError>(
        [&] {
          sgd.apply_gradients({{floats({2, 2}), v}});
        },
        "apply_gradients() cannot be called in the cross-replica context"));
    // Inside merge_call is the cross-replica context too.
    EXPECT_TRUE(throws_with<InvalidArgumentError>(
        [&] {
          strategy->run([&] {
            get_replica_context()->merge_call([&](Strategy&) {
              sgd.apply_gradients({{floats({2, 2}), v}});
            });
          });
        },
        "SGD.apply_gradients"));
    for (const Tensor& copy : v.local_values()) {
      EXPECT_TRUE(testing::tensor_equals(copy, DataType::kFloat32, {2}, {1, 2},
                                         strategy->extended().worker_devices()[0]));
    }
    EXPECT_EQ(sgd.iterations(), 0);
    strategy->run([&] { sgd.apply_gradients({{floats({2, 2}), v}}); });
    const double step = 0.5 * 2 * strategy->num_replicas_in_sync();
    EXPECT_TRUE(testing::tensor_equals(v.value(), DataType::kFloat32, {2}, {1 - step, 2 - step}));
  }
  Variable plain(floats({1}), {.name = "plain"});
  SGD sgd(0.5);
  sgd.apply_gradients({{floats({4}), plain}});
  EXPECT_TRUE(testing::tensor_equals(plain.value(), DataType::kFloat32, {1}, {-1}));
}

// A multi-replica run() result is no single value.
TEST(Misuse, PlainValueOfAMultiReplicaResult) {
  MirroredStrategy strategy(MirroredStrategy::cpu_devices(2));
  const PerReplica<Tensor> results = strategy.run([] { return floats({1}); });
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        const Tensor& t = results;
        (void)t;
      },
      "has 2 per-replica values, not one"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { (void)results->num_elements(); },
                                                "Strategy::reduce"));
}

}  // namespace
}  // namespace collective::distribute
