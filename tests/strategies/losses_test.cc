// compute_average_loss and scale_regularization_loss (tf.nn's): the
// divisor (given, or the replica's batch x num_replicas_in_sync), sample
// weights with Keras's squeeze/expand and broadcasting, every floating
// dtype, the context rules and bad input. Expected values are exact.
#include <gtest/gtest.h>

#include <optional>

#include "strategies_test_util.h"

namespace collective::distribute {
namespace {

using testing::floats;
using testing::tensor_equals;
using testing::throws_with;

Tensor of(DataType dtype, std::vector<double> values, Shape shape) {
  return Tensor::from_doubles(dtype, values, std::move(shape));
}

TEST(ComputeAverageLoss, DividesTheSumByTheGlobalBatchSize) {
  EXPECT_TRUE(
      tensor_equals(compute_average_loss(floats({1, 2, 3, 4}), 8), DataType::kFloat32, {}, {1.25}));
  // No strategy: the global batch is this batch.
  EXPECT_TRUE(
      tensor_equals(compute_average_loss(floats({1, 2, 3, 4})), DataType::kFloat32, {}, {2.5}));
  // Rank 2: every element counts, dimension 0 is the batch.
  EXPECT_TRUE(
      tensor_equals(compute_average_loss(of(DataType::kFloat32, {1, 2, 3, 4, 5, 6}, {2, 3})),
                    DataType::kFloat32, {}, {10.5}));
  // An empty slice contributes nothing (TF's 0/0 would be NaN).
  EXPECT_TRUE(tensor_equals(compute_average_loss(Tensor(DataType::kFloat32, {0})),
                            DataType::kFloat32, {}, {0}));
  EXPECT_TRUE(tensor_equals(compute_average_loss(Tensor(DataType::kFloat32, {0}), 4),
                            DataType::kFloat32, {}, {0}));
}

TEST(ComputeAverageLoss, KeepsTheDtypeAndRoundsOnce) {
  for (DataType dtype :
       {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    const Tensor average = compute_average_loss(of(dtype, {1.5, 2.5, 4, 0}, {4}), 2);
    EXPECT_TRUE(tensor_equals(average, dtype, {}, {4}, std::string(to_string(dtype))));
  }
  // Summed in double: a float32 running sum would lose the 1.
  const Tensor average = compute_average_loss(floats({1e8f, 1, -1e8f}), 3);
  EXPECT_TRUE(tensor_equals(average, DataType::kFloat32, {}, {static_cast<float>(1.0 / 3.0)}));
  const Tensor exact = compute_average_loss(of(DataType::kFloat64, {0.1, 0.2}, {2}), 3);
  EXPECT_TRUE(tensor_equals(exact, DataType::kFloat64, {}, {(0.1 + 0.2) / 3}));
}

TEST(ComputeAverageLoss, WeightsEachExample) {
  const Tensor loss = floats({1, 2, 3, 4});
  // A scalar weight scales every example.
  EXPECT_TRUE(tensor_equals(compute_average_loss(loss, 4, floats({2}).reshape({})),
                            DataType::kFloat32, {}, {5}));
  // One weight per example, of another dtype.
  const Tensor per_example = Tensor(std::vector<std::int32_t>{1, 0, 2, 1}, Shape{4});
  EXPECT_TRUE(
      tensor_equals(compute_average_loss(loss, 4, per_example), DataType::kFloat32, {}, {2.75}));
  // Weights [4, 1] for losses [4]: the trailing 1 is squeezed.
  EXPECT_TRUE(tensor_equals(compute_average_loss(loss, 4, floats({1, 0, 2, 1}).reshape({4, 1})),
                            DataType::kFloat32, {}, {2.75}));
  // Weights [4] for losses [4, 1]: expanded.
  EXPECT_TRUE(tensor_equals(compute_average_loss(loss.reshape({4, 1}), 4, floats({1, 0, 2, 1})),
                            DataType::kFloat32, {}, {2.75}));
  // Broadcast along dimensions of size 1: [1, 3] and [2, 1] over [2, 3].
  const Tensor grid = of(DataType::kFloat32, {1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(tensor_equals(compute_average_loss(grid, 2, floats({1, 0, 10}).reshape({1, 3})),
                            DataType::kFloat32, {}, {(1 + 30 + 4 + 60) / 2.0}));
  EXPECT_TRUE(tensor_equals(compute_average_loss(grid, 2, floats({0, 1}).reshape({2, 1})),
                            DataType::kFloat32, {}, {15 / 2.0}));
  // The same shape.
  EXPECT_TRUE(tensor_equals(
      compute_average_loss(grid, 1, of(DataType::kFloat64, {1, 1, 1, 0, 0, 2}, {2, 3})),
      DataType::kFloat32, {}, {18}));
}

TEST(ComputeAverageLoss, RejectsBadInputNamingIt) {
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] { compute_average_loss(floats({1}).reshape({})); }, "rank >= 1"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] { compute_average_loss(Tensor(std::vector<std::int32_t>{1}, Shape{1})); }, "floating"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>([] { compute_average_loss(floats({1}), 0); },
                                                "global_batch_size must be positive, got 0"));
  EXPECT_TRUE(
      throws_with<InvalidArgumentError>([] { compute_average_loss(floats({1}), -3); }, "got -3"));
  // [3] cannot be broadcast to [2, 3] (only a trailing 1 is expanded), nor
  // [3] to [4].
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] {
        compute_average_loss(of(DataType::kFloat32, {1, 2, 3, 4, 5, 6}, {2, 3}), 2,
                             floats({1, 1, 1}));
      },
      "sample_weight of shape [3] cannot be broadcast to per_example_loss of shape [2, 3]"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] {
        compute_average_loss(floats({1, 2, 3, 4}), 2, floats({1, 1, 1}));
      },
      "cannot be broadcast"));
}

TEST(ComputeAverageLoss, DefaultGlobalBatchCountsEveryReplica) {
  MirroredStrategy strategy(MirroredStrategy::cpu_devices(3));
  auto scope = strategy.scope();
  const PerReplica<Tensor> losses = strategy.run([] {
    // Replica r has 2 examples of loss r + 1: its share is 2 (r + 1) / 6.
    const float r = static_cast<float>(get_replica_context()->replica_id_in_sync_group());
    return compute_average_loss(floats({r + 1, r + 1}));
  });
  for (std::size_t r = 0; r < 3; ++r) {
    EXPECT_TRUE(tensor_equals(losses[r], DataType::kFloat32, {},
                              {static_cast<float>(2.0 * (r + 1) / 6.0)},
                              "replica " + std::to_string(r)));
  }
  EXPECT_TRUE(tensor_equals(strategy.reduce(ReduceOp::kSum, losses), DataType::kFloat32, {},
                            {static_cast<float>(2.0 / 6) + static_cast<float>(4.0 / 6) + 1.0f}));
  // In the cross-replica context only an explicit batch size makes sense.
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] {
        compute_average_loss(floats({1, 2}));
      },
      "cross-replica context"));
  EXPECT_TRUE(
      tensor_equals(compute_average_loss(floats({1, 2}), 6), DataType::kFloat32, {}, {0.5}));
}

TEST(ScaleRegularizationLoss, DividesByTheReplicasInSync) {
  // No strategy: one replica.
  EXPECT_TRUE(
      tensor_equals(scale_regularization_loss(floats({1, 2})), DataType::kFloat32, {}, {3}));
  EXPECT_TRUE(tensor_equals(scale_regularization_loss(of(DataType::kFloat64, {7}, {})),
                            DataType::kFloat64, {}, {7}));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] { scale_regularization_loss(Tensor(std::vector<std::int64_t>{1}, Shape{1})); },
      "floating"));

  MirroredStrategy strategy(MirroredStrategy::cpu_devices(4));
  auto scope = strategy.scope();
  const PerReplica<Tensor> scaled = strategy.run([] {
    return scale_regularization_loss(of(DataType::kBFloat16, {2, 4}, {2, 1}));
  });
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_TRUE(
        tensor_equals(scaled[r], DataType::kBFloat16, {}, {1.5}, "replica " + std::to_string(r)));
  }
  EXPECT_TRUE(throws_with<InvalidArgumentError>([] { scale_regularization_loss(floats({1})); },
                                                "cross-replica context"));
}

}  // namespace
}  // namespace collective::distribute
