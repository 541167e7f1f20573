// CentralStorageStrategy: one copy of each variable, compute replicated on
// local replicas, updates aggregated before being applied once. Its updates
// are summed in ReductionToOneDevice's order, as MirroredStrategy's default,
// so on the same data the two agree bit for bit (the end-to-end training
// comparison within the float32 bound is strategies_train_central_storage_x3).
#include <gtest/gtest.h>

#include "collective/distribute/distribute.h"

namespace cd = collective::distribute;
using collective::DataType;
using collective::ReduceOp;

namespace {

// Several SGD steps where replica r's gradient for element i of step s is
// a distinct non-integer value, so the summation order matters to rounding.
std::vector<cd::Tensor> train(cd::Strategy& strategy, int steps) {
  auto scope = strategy.scope();
  cd::Variable kernel(cd::Tensor(std::vector<float>(33, 0.25f), {33}),
                      {.name = "kernel", .aggregation = cd::VariableAggregation::kSum});
  cd::Variable counter(cd::Tensor::scalar<std::int64_t>(0),
                       {.name = "counter", .aggregation = cd::VariableAggregation::kSum});
  cd::SGD optimizer(0.125);
  for (int s = 0; s < steps; ++s) {
    strategy.run([&] {
      cd::ReplicaContext* context = cd::get_replica_context();
      const int r = context->replica_id_in_sync_group();
      const cd::Tensor w = kernel.value();
      std::vector<float> gradient(33);
      for (std::size_t i = 0; i < 33; ++i) {
        gradient[i] = w.values<float>()[i] * 0.3f +
                      0.1f * static_cast<float>(r + 1) / static_cast<float>(i + 3 + s);
      }
      optimizer.apply_gradients({{cd::Tensor(gradient, {33}), kernel}});
      counter.assign_add(cd::Tensor::scalar<std::int64_t>(r + 1));
    });
  }
  EXPECT_EQ(kernel.num_copies(), strategy.name() == "CentralStorageStrategy"
                                     ? 1u
                                     : static_cast<std::size_t>(strategy.num_replicas_in_sync()));
  return {kernel.value(), counter.value()};
}

}  // namespace

TEST(CentralStorageStrategy, OneCopyAndMirroredResults) {
  for (int replicas : {1, 2, 3, 4}) {
    cd::CentralStorageStrategy central(cd::MirroredStrategy::cpu_devices(replicas));
    cd::MirroredStrategy mirrored(cd::MirroredStrategy::cpu_devices(replicas));
    EXPECT_EQ(central.name(), "CentralStorageStrategy");
    EXPECT_EQ(central.num_replicas_in_sync(), replicas);
    EXPECT_EQ(central.extended().parameter_devices().size(), 1u);
    const std::vector<cd::Tensor> a = train(central, 7);
    const std::vector<cd::Tensor> b = train(mirrored, 7);
    for (std::size_t i = 0; i < a[0].num_elements(); ++i) {
      ASSERT_EQ(a[0].values<float>()[i], b[0].values<float>()[i])
          << replicas << " replicas, kernel index " << i;
    }
    // Each step adds 1 + 2 + ... + K once (aggregated, not per replica).
    EXPECT_EQ(a[1].values<std::int64_t>()[0], 7LL * replicas * (replicas + 1) / 2) << replicas;
    EXPECT_EQ(b[1].values<std::int64_t>()[0], 7LL * replicas * (replicas + 1) / 2) << replicas;
    {
      auto scope = central.scope();
      cd::Variable v(cd::Tensor::scalar(1.0f));
      EXPECT_FALSE(v.is_mirrored());
      EXPECT_EQ(v.num_copies(), 1u);
      EXPECT_EQ(central.experimental_local_results(v).size(), 1u);
    }
  }
  EXPECT_THROW(cd::CentralStorageStrategy({"/gpu:0"}), collective::UnsupportedError);
}

// Sync-on-read under CentralStorageStrategy: a copy per compute replica
// (not the one central copy), reduced when read in the cross-replica context.
TEST(CentralStorageStrategy, SyncOnReadVariablesHaveACopyPerReplica) {
  cd::CentralStorageStrategy strategy(cd::MirroredStrategy::cpu_devices(3));
  auto scope = strategy.scope();
  cd::SyncOnReadVariable seen(cd::Tensor::scalar<std::int64_t>(0),
                              {.name = "seen", .aggregation = cd::VariableAggregation::kSum});
  EXPECT_EQ(seen.num_copies(), 3u);
  strategy.run([&] {
    seen.assign_add(cd::Tensor::scalar<std::int64_t>(
        cd::get_replica_context()->replica_id_in_sync_group() + 1));
  });
  const std::vector<cd::Tensor> copies = seen.local_values();
  for (std::size_t r = 0; r < 3; ++r)
    EXPECT_EQ(copies[r].values<std::int64_t>()[0], static_cast<std::int64_t>(r + 1))
        << "replica " << r;
  EXPECT_EQ(seen.value().values<std::int64_t>()[0], 6);
}
