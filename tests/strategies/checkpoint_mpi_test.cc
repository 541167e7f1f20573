// Checkpoints across processes: MultiWorkerMirroredStrategy saves from the
// chief and restores on every worker (with another replica count), an error
// on the chief reaches every worker; a parameter-server checkpoint restores
// under another ps count and sharding, and into a single-process strategy.
#include <gtest/gtest.h>
#include <mpi.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "collective/collective.h"
#include "collective/distribute/distribute.h"

namespace cd = collective::distribute;
using collective::Communicator;
using collective::DataType;

namespace {

cd::Tensor pattern(DataType dtype, const cd::Shape& shape, int seed) {
  std::vector<double> values(cd::num_elements(shape));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<double>((i * 3 + seed) % 17);
  return cd::Tensor::from_doubles(dtype, values, shape);
}

// A directory made by rank 0, the same path on every rank.
std::string shared_directory() {
  char path[64] = {0};
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::strcpy(path, "/tmp/collective_ckpt_mpi_XXXXXX");
    if (::mkdtemp(path) == nullptr) path[0] = '\0';
  }
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

void remove_directory(const std::string& path) {
  MPI_Barrier(MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::error_code ignored;
  if (rank == 0) std::filesystem::remove_all(path, ignored);
}

std::vector<std::pair<std::string, cd::Variable>> variables_of(int seed) {
  return {{"kernel", cd::Variable(pattern(DataType::kFloat32, {9, 4}, seed), {.name = "kernel"})},
          {"bias", cd::Variable(pattern(DataType::kFloat64, {4}, seed + 1), {.name = "bias"})},
          {"count", cd::Variable(pattern(DataType::kInt64, {}, seed + 2), {.name = "count"})}};
}

void expect_all_copies(const std::vector<std::pair<std::string, cd::Variable>>& variables, int seed,
                       const std::string& what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int offset = 0;
  for (const auto& [name, variable] : variables) {
    const cd::Tensor expected = pattern(variable.dtype(), variable.shape(), seed + offset++);
    for (const cd::Tensor& copy : variable.local_values()) {
      EXPECT_TRUE(copy.identical(expected)) << "rank " << rank << " " << what << ": " << name;
    }
  }
}

}  // namespace

TEST(CheckpointMultiWorker, ChiefSavesEveryWorkerRestores) {
  const std::string dir = shared_directory();
  ASSERT_FALSE(dir.empty());
  {
    cd::MultiWorkerMirroredStrategy strategy;
    auto scope = strategy.scope();
    auto variables = variables_of(1);
    cd::SGD optimizer(0.5);
    optimizer.set_iterations(9);
    cd::Checkpoint checkpoint(strategy, variables, &optimizer);
    EXPECT_FALSE(checkpoint.restore(dir));
    checkpoint.set_step(12);
    EXPECT_EQ(checkpoint.save(dir), dir + "/ckpt-12");
  }
  {
    cd::MultiWorkerMirroredStrategy strategy({}, cd::MirroredStrategy::cpu_devices(2));
    auto scope = strategy.scope();
    auto variables = variables_of(50);
    cd::SGD optimizer(0.5);
    cd::Checkpoint checkpoint(strategy, variables, &optimizer);
    ASSERT_TRUE(checkpoint.restore(dir));
    expect_all_copies(variables, 1, "restored with 2 local replicas");
    EXPECT_EQ(optimizer.iterations(), 9);
    EXPECT_EQ(checkpoint.step(), 12);
    // A corrupted file on the chief: every worker raises, naming it, and
    // nothing changes anywhere.
    auto fresh = variables_of(60);
    cd::Checkpoint other(strategy, fresh);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
      std::fstream file(dir + "/ckpt-12", std::ios::in | std::ios::out | std::ios::binary);
      file.seekp(50);
      file.put('\x7f');
    }
    MPI_Barrier(MPI_COMM_WORLD);
    try {
      other.restore(dir);
      ADD_FAILURE() << "rank " << rank << ": a corrupted checkpoint was restored";
    } catch (const collective::InvalidArgumentError& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find(dir + "/ckpt-12"), std::string::npos) << "rank " << rank << ": " << what;
      EXPECT_NE(what.find("checksum mismatch"), std::string::npos)
          << "rank " << rank << ": " << what;
    }
    expect_all_copies(fresh, 60, "after a refused restore");
    // `latest` naming a directory on the chief: every worker raises the
    // checkpoint error naming that path.
    if (rank == 0) {
      std::filesystem::create_directory(dir + "/ckpt-dir");
      std::ofstream(dir + "/latest", std::ios::trunc) << "ckpt-dir\n";
    }
    MPI_Barrier(MPI_COMM_WORLD);
    try {
      other.restore(dir);
      ADD_FAILURE() << "rank " << rank << ": a directory was restored as a checkpoint";
    } catch (const collective::InvalidArgumentError& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find(dir + "/ckpt-dir: is a directory, not a checkpoint file"),
                std::string::npos)
          << "rank " << rank << ": " << what;
    }
    expect_all_copies(fresh, 60, "after a refused restore of a directory");
  }
  remove_directory(dir);
}

// A worker whose checkpoint names its variables differently (or tracks
// fewer): every worker raises, naming that worker and the variable, before
// any worker changes anything. Once the chief restored while that worker
// failed with std::out_of_range (map::at): the workers held different
// weights.
TEST(CheckpointMultiWorker, WorkersTrackingDifferentVariablesRestoreNothing) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string dir = shared_directory();
  ASSERT_FALSE(dir.empty());
  const int odd = size - 1;  // the worker that differs
  {
    cd::MultiWorkerMirroredStrategy strategy;
    auto scope = strategy.scope();
    cd::Checkpoint checkpoint(strategy, variables_of(1));
    checkpoint.save(dir);
  }
  for (const bool renamed : {true, false}) {
    cd::MultiWorkerMirroredStrategy strategy({}, cd::MirroredStrategy::cpu_devices(2));
    auto scope = strategy.scope();
    auto variables = variables_of(80);
    auto tracked = variables;
    if (rank == odd && renamed) tracked[0].first = "weights";
    if (rank == odd && !renamed) tracked.pop_back();
    cd::Checkpoint checkpoint(strategy, tracked);
    const std::string needle = renamed
                                   ? "has no variable 'weights'"
                                   : "holds variable 'count', which this checkpoint does not track";
    try {
      checkpoint.restore(dir);
      ADD_FAILURE() << "rank " << rank << ": restored although worker " << odd
                    << " tracks other variables";
    } catch (const collective::InvalidArgumentError& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find("worker " + std::to_string(odd) + ": "), std::string::npos)
          << "rank " << rank << ": " << what;
      EXPECT_NE(what.find(needle), std::string::npos) << "rank " << rank << ": " << what;
      EXPECT_NE(what.find("no worker restored anything"), std::string::npos)
          << "rank " << rank << ": " << what;
    } catch (const std::exception& other) {
      ADD_FAILURE() << "rank " << rank << ": " << other.what();
    }
    expect_all_copies(
        variables, 80,
        renamed ? "after a refused restore (renamed)" : "after a refused restore (untracked)");
  }
  remove_directory(dir);
}

// A sync-on-read variable is saved as its reduction over every replica of
// every worker (read on every worker, written by the chief) and restored by
// a cross-replica assign: SUM spreads it so the read gives it back.
TEST(CheckpointMultiWorker, SyncOnReadVariablesSaveTheirReducedValue) {
  const std::string dir = shared_directory();
  ASSERT_FALSE(dir.empty());
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::int64_t replicas = 2 * size;
  {
    cd::MultiWorkerMirroredStrategy strategy({}, cd::MirroredStrategy::cpu_devices(2));
    auto scope = strategy.scope();
    cd::SyncOnReadVariable count(cd::Tensor::scalar<std::int64_t>(0),
                                 {.name = "count", .aggregation = cd::VariableAggregation::kSum});
    strategy.run([&] {
      count.assign_add(cd::Tensor::scalar<std::int64_t>(
          cd::get_replica_context()->replica_id_in_sync_group() + 1));
    });
    cd::Checkpoint checkpoint(strategy, {{"count", count}});
    checkpoint.set_step(1);
    checkpoint.save(dir);
  }
  {
    cd::MultiWorkerMirroredStrategy strategy;
    auto scope = strategy.scope();
    cd::SyncOnReadVariable count(cd::Tensor::scalar<std::int64_t>(5),
                                 {.name = "count", .aggregation = cd::VariableAggregation::kSum});
    cd::Checkpoint checkpoint(strategy, {{"count", count}});
    ASSERT_TRUE(checkpoint.restore(dir));
    // 1 + 2 + ... + replicas, spread over `size` copies of one replica each.
    const std::int64_t total = replicas * (replicas + 1) / 2;
    EXPECT_EQ(count.local_values().front().values<std::int64_t>()[0], total / size)
        << "rank " << rank;
    EXPECT_EQ(count.value().values<std::int64_t>()[0], total) << "rank " << rank;
  }
  remove_directory(dir);
}

TEST(CheckpointParameterServer, RestoresUnderAnotherPsCountAndSharding) {
  Communicator world = Communicator::world();
  if (world.size() < 3) GTEST_SKIP() << "needs a chief, a ps and a worker";
  const std::string dir = shared_directory();
  cd::RemoteFunctions functions;
  const auto read =
      functions.add("read", [](cd::ClosureArguments& args) { return args.variable(0).value(); });
  const auto step = functions.add("step", [](cd::ClosureArguments& args) {
    cd::SGD optimizer(1.0);
    optimizer.apply_gradients({{args.tensor(1), args.variable(0)}});
    return cd::Tensor();
  });
  // Saved from 1 ps, unsharded, after a few worker updates (-1 per step).
  {
    cd::MPIClusterResolver resolver(world, 1);
    cd::ParameterServerStrategy strategy(resolver, functions);
    if (strategy.is_coordinator()) {
      auto scope = strategy.scope();
      auto variables = variables_of(10);  // seed 10: kernel 10.., bias 11.., count 12..
      cd::ClusterCoordinator coordinator(strategy);
      for (int k = 0; k < 3; ++k) {
        coordinator.schedule(step, {variables[0].second,
                                    cd::Tensor::from_doubles(DataType::kFloat32,
                                                             std::vector<double>(36, 1), {9, 4})});
      }
      coordinator.join();
      cd::Checkpoint checkpoint(strategy, variables);
      checkpoint.set_step(3);
      checkpoint.save(dir);
    }
  }
  // Restored under as many ps as the ranks allow, sharded 3 ways.
  const int num_ps = world.size() >= 4 ? 2 : 1;
  {
    cd::MPIClusterResolver resolver(world, num_ps);
    cd::ParameterServerOptions options;
    options.variable_partitioner = cd::FixedShardsPartitioner(3);
    cd::ParameterServerStrategy strategy(resolver, functions, options);
    if (strategy.is_coordinator()) {
      std::vector<double> kernel = pattern(DataType::kFloat32, {9, 4}, 10).to_doubles();
      for (double& x : kernel) x -= 3;
      const cd::Tensor expected_kernel =
          cd::Tensor::from_doubles(DataType::kFloat32, kernel, {9, 4});
      {
        auto scope = strategy.scope();
        auto variables = variables_of(40);
        EXPECT_EQ(strategy.shards(variables[0].second).size(), 3u);
        cd::Checkpoint checkpoint(strategy, variables);
        ASSERT_TRUE(checkpoint.restore(dir));
        EXPECT_EQ(checkpoint.step(), 3);
        cd::ClusterCoordinator coordinator(strategy);
        EXPECT_TRUE(
            coordinator.schedule(read, {variables[0].second}).fetch().identical(expected_kernel))
            << "a worker's read of the restored kernel";
        EXPECT_TRUE(variables[0].second.value().identical(expected_kernel));
        EXPECT_TRUE(variables[1].second.value().identical(pattern(DataType::kFloat64, {4}, 11)));
        EXPECT_TRUE(variables[2].second.value().identical(pattern(DataType::kInt64, {}, 12)));
      }
      // The same checkpoint in a single-process strategy.
      cd::MirroredStrategy mirrored(cd::MirroredStrategy::cpu_devices(2));
      auto mirrored_scope = mirrored.scope();
      auto local = variables_of(70);
      cd::Checkpoint local_checkpoint(mirrored, local);
      ASSERT_TRUE(local_checkpoint.restore(dir));
      for (const cd::Tensor& copy : local[0].second.local_values())
        EXPECT_TRUE(copy.identical(expected_kernel));
    }
  }
  remove_directory(dir);
}
