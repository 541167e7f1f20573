// ParameterServerStrategy and ClusterCoordinator with real processes: rank 0
// coordinates, 1 ps at 3-4 ranks and 2 ps at 5 ranks, the rest are workers.
// At 1-2 ranks the layout must be refused. Every test constructs its own
// strategy; on ps and worker ranks the constructor serves until the chief's
// strategy is destroyed, then the test returns there.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>

#include "collective/collective.h"
#include "collective/distribute/distribute.h"
#include "ps/ps_cluster.h"  // PsCluster::staged_requests

namespace cd = collective::distribute;
using collective::Communicator;
using collective::DataType;

namespace {

int ps_for(int size) { return size >= 5 ? 2 : 1; }

// Values that are exact in every dtype (small integers).
cd::Tensor pattern(DataType dtype, const cd::Shape& shape, int seed) {
  std::vector<double> values(cd::num_elements(shape));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<double>((i * 7 + seed) % 13);
  return cd::Tensor::from_doubles(dtype, values, shape);
}

cd::Tensor filled(DataType dtype, const cd::Shape& shape, double value) {
  return cd::Tensor::from_doubles(dtype, std::vector<double>(cd::num_elements(shape), value),
                                  shape);
}

// Every element, naming the first that differs.
void expect_equal(const cd::Tensor& actual, const cd::Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  const std::vector<double> a = actual.to_doubles();
  const std::vector<double> e = expected.to_doubles();
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i], e[i]) << what << ": index " << i << " expected " << e[i] << " actual " << a[i];
  }
}

std::vector<std::string> all_hosts(const Communicator& world) {
  const std::string mine = collective::Environment::host_name();
  std::vector<char> slot(256, 0);
  std::copy(mine.begin(), mine.end(), slot.begin());
  std::vector<char> all(256 * static_cast<std::size_t>(world.size()));
  MPI_Allgather(slot.data(), 256, MPI_CHAR, all.data(), 256, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> hosts;
  for (int r = 0; r < world.size(); ++r) hosts.emplace_back(all.data() + 256 * r);
  return hosts;
}

const std::vector<DataType> kDtypes = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                                       DataType::kBFloat16, DataType::kInt8,    DataType::kUInt8,
                                       DataType::kInt32,    DataType::kInt64};

}  // namespace

TEST(ParameterServerLayout, RolesFromRanks) {
  Communicator world = Communicator::world();
  const int size = world.size();
  const int rank = world.rank();
  EXPECT_THROW(cd::MPIClusterResolver(world, 0), collective::InvalidArgumentError);
  try {
    cd::MPIClusterResolver bad(world, size - 1);
    ADD_FAILURE() << "num_ps = size - 1 leaves no worker but was accepted";
  } catch (const collective::InvalidArgumentError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find(std::to_string(size) + " ranks"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(size - 1) + " ps"), std::string::npos) << what;
    EXPECT_NE(what.find("0 workers"), std::string::npos) << what;
  }
  ::setenv("COLLECTIVE_NUM_PS", "1x", 1);
  try {
    cd::MPIClusterResolver bad(world, std::nullopt);
    ADD_FAILURE() << "COLLECTIVE_NUM_PS=1x was accepted";
  } catch (const collective::InvalidArgumentError& error) {
    EXPECT_NE(std::string(error.what()).find("COLLECTIVE_NUM_PS=1x is not a decimal integer"),
              std::string::npos)
        << error.what();
  }
  ::setenv("COLLECTIVE_NUM_PS", " 1", 1);
  EXPECT_THROW(cd::MPIClusterResolver(world, std::nullopt), collective::InvalidArgumentError);
  ::unsetenv("COLLECTIVE_NUM_PS");
  EXPECT_THROW(cd::MPIClusterResolver(world, std::nullopt), collective::InvalidArgumentError);
  if (size < 3) {
    // No layout fits: a chief, a ps and a worker need three ranks.
    try {
      cd::MPIClusterResolver bad(world, 1);
      ADD_FAILURE() << "1 ps at " << size << " ranks was accepted";
    } catch (const collective::InvalidArgumentError& error) {
      EXPECT_NE(std::string(error.what()).find(std::to_string(size) + " ranks"), std::string::npos)
          << error.what();
    }
    return;
  }
  const int num_ps = ps_for(size);
  ::setenv("COLLECTIVE_NUM_PS", std::to_string(num_ps).c_str(), 1);
  cd::MPIClusterResolver from_env(world, std::nullopt);
  ::unsetenv("COLLECTIVE_NUM_PS");
  cd::MPIClusterResolver resolver(world, num_ps);
  for (const cd::MPIClusterResolver* r : {&from_env, &resolver}) {
    EXPECT_EQ(r->num_ps(), num_ps);
    EXPECT_EQ(r->num_workers(), size - 1 - num_ps);
    if (rank == 0) {
      EXPECT_EQ(r->task_type(), "chief");
      EXPECT_EQ(r->task_id(), 0);
    } else if (rank <= num_ps) {
      EXPECT_EQ(r->task_type(), "ps");
      EXPECT_EQ(r->task_id(), rank - 1);
    } else {
      EXPECT_EQ(r->task_type(), "worker");
      EXPECT_EQ(r->task_id(), rank - 1 - num_ps);
    }
    EXPECT_EQ(r->rank_of(r->task_type(), r->task_id()), rank);
  }
  const std::vector<std::string> hosts = all_hosts(world);
  const cd::ClusterSpec spec = resolver.cluster_spec();
  EXPECT_EQ(spec.jobs(), (std::vector<std::string>{"chief", "ps", "worker"}));
  EXPECT_EQ(spec.num_tasks("chief"), 1);
  EXPECT_EQ(spec.num_tasks("ps"), num_ps);
  EXPECT_EQ(spec.num_tasks("worker"), size - 1 - num_ps);
  EXPECT_EQ(spec.task_address("chief", 0), hosts[0]);
  for (int p = 0; p < num_ps; ++p)
    EXPECT_EQ(spec.task_address("ps", p), hosts[static_cast<std::size_t>(1 + p)]);
  for (int w = 0; w < size - 1 - num_ps; ++w) {
    EXPECT_EQ(spec.task_address("worker", w), hosts[static_cast<std::size_t>(1 + num_ps + w)]);
  }
  const collective::Topology& topology = world.topology();
  EXPECT_EQ(resolver.num_accelerators(),
            static_cast<int>(topology.node(topology.node_of(rank)).gpus.size()));
}

TEST(ParameterServerLayout, Partitioners) {
  EXPECT_EQ(cd::FixedShardsPartitioner(3)({10, 4}, DataType::kFloat32), 3);
  EXPECT_EQ(cd::FixedShardsPartitioner(3)({2, 4}, DataType::kFloat32), 2);
  EXPECT_EQ(cd::FixedShardsPartitioner(3)({}, DataType::kFloat32), 1);
  // 1000 x 64 float32 = 256,000 bytes.
  EXPECT_EQ(cd::MinSizePartitioner(64 << 10, 8)({1000, 64}, DataType::kFloat32), 3);
  EXPECT_EQ(cd::MinSizePartitioner(64 << 10, 2)({1000, 64}, DataType::kFloat32), 2);
  EXPECT_EQ(cd::MinSizePartitioner()({1000, 64}, DataType::kFloat32), 1);
  EXPECT_EQ(cd::MinSizePartitioner(1 << 20, 4)({1000, 64}, DataType::kFloat32), 1);
  EXPECT_EQ(cd::MaxSizePartitioner(100 << 10)({1000, 64}, DataType::kFloat32), 3);
  EXPECT_EQ(cd::MaxSizePartitioner(100 << 10, 2)({1000, 64}, DataType::kFloat32), 2);
  EXPECT_EQ(cd::MaxSizePartitioner(1)({3, 64}, DataType::kFloat32), 3);
  EXPECT_THROW(cd::FixedShardsPartitioner(0), collective::InvalidArgumentError);
  EXPECT_THROW(cd::MinSizePartitioner(0, 1), collective::InvalidArgumentError);
}

// Every dtype and size, updated concurrently by every worker; payloads above
// 64 KiB go through same-node shared memory (on) or MPI messages (off).
void check_every_dtype_and_size(const Communicator& world, bool same_node_shared_memory) {
  cd::RemoteFunctions functions;
  const auto add = functions.add("add_delta", [](cd::ClosureArguments& args) {
    cd::Variable v = args.variable(0);
    v.assign_add(args.tensor(1));
    return cd::Tensor();
  });
  const auto read =
      functions.add("read", [](cd::ClosureArguments& args) { return args.variable(0).value(); });
  cd::MPIClusterResolver resolver(world, ps_for(world.size()));
  cd::ParameterServerOptions options;
  options.same_node_shared_memory = same_node_shared_memory;
  cd::ParameterServerStrategy strategy(resolver, functions, options);
  if (!strategy.is_coordinator()) return;
  const int num_ps = strategy.num_ps();
  const int adds = 3 * strategy.num_workers();
  auto scope = strategy.scope();
  struct Case {
    cd::Variable variable;
    cd::Tensor initial;
  };
  std::vector<Case> cases;
  // 40000: inline for 1-byte dtypes, above the 64 KiB inline size for the
  // others; 140000: above it for every dtype, and above the first 1 MiB
  // staging segment for 8-byte dtypes (a second generation).
  const std::vector<cd::Shape> shapes = {{}, {0}, {5}, {7, 3}, {40000}, {140000}};
  int index = 0;
  for (DataType dtype : kDtypes) {
    for (const cd::Shape& shape : shapes) {
      cd::Tensor initial = pattern(dtype, shape, index);
      cd::Variable variable(initial, {.name = "v" + std::to_string(index)});
      EXPECT_EQ(variable.strategy_name(), "ParameterServerStrategy");
      const auto shards = strategy.shards(variable);
      ASSERT_EQ(shards.size(), 1u);
      EXPECT_EQ(shards[0].ps, index % num_ps) << "round-robin placement of variable " << index;
      expect_equal(variable.value(), initial, "initial value of " + variable.name());
      cases.push_back({variable, initial});
      ++index;
    }
  }
  // Every worker adds concurrently; the ps applies each add atomically.
  cd::ClusterCoordinator coordinator(strategy);
  for (const Case& c : cases) {
    for (int k = 0; k < adds; ++k) {
      coordinator.schedule(add, {c.variable, filled(c.initial.dtype(), c.initial.shape(), 1)});
    }
  }
  coordinator.join();
  std::vector<cd::RemoteValue> reads;
  for (const Case& c : cases) reads.push_back(coordinator.schedule(read, {c.variable}));
  const std::vector<cd::Tensor> fetched = coordinator.fetch(reads);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::vector<double> sums = cases[i].initial.to_doubles();
    for (double& x : sums) x += adds;  // small integers: exact in every dtype
    const cd::Tensor expected =
        cd::Tensor::from_doubles(cases[i].initial.dtype(), sums, cases[i].initial.shape());
    expect_equal(fetched[i], expected, "worker read of " + cases[i].variable.name());
    expect_equal(cases[i].variable.value(), expected, "chief read of " + cases[i].variable.name());
    // Coordinator-side updates.
    cases[i].variable.assign(cases[i].initial);
    cases[i].variable.assign_sub(filled(expected.dtype(), expected.shape(), 1));
    cases[i].variable.assign_add(filled(expected.dtype(), expected.shape(), 2));
    std::vector<double> e = cases[i].initial.to_doubles();
    for (double& x : e) x += 1;
    expect_equal(cases[i].variable.value(),
                 cd::Tensor::from_doubles(expected.dtype(), e, expected.shape()),
                 "after assign/assign_sub/assign_add of " + cases[i].variable.name());
  }
  // The chief's own reads and updates above 64 KiB took the path asked for
  // (every rank of these tests shares one node).
  const std::uint64_t staged = strategy.cluster().client->staged_requests();
  if (same_node_shared_memory) {
    EXPECT_GT(staged, 0u) << "rank " << world.rank()
                          << ": no request went through same-node shared memory";
  } else {
    EXPECT_EQ(staged, 0u) << "rank " << world.rank()
                          << ": shared memory was used although turned off";
  }
  EXPECT_THROW(cases[0].variable.assign(cd::Tensor(DataType::kInt32, {3})),
               collective::InvalidArgumentError);
}

TEST(ParameterServer, VariablesOfEveryDtypeAndSizeSharedMemory) {
  Communicator world = Communicator::world();
  if (world.size() < 3) GTEST_SKIP() << "needs a chief, a ps and a worker";
  check_every_dtype_and_size(world, true);
}

TEST(ParameterServer, VariablesOfEveryDtypeAndSizeMessages) {
  Communicator world = Communicator::world();
  if (world.size() < 3) GTEST_SKIP() << "needs a chief, a ps and a worker";
  check_every_dtype_and_size(world, false);
}

TEST(ParameterServer, ShardedVariablesAndSgd) {
  Communicator world = Communicator::world();
  if (world.size() < 3) GTEST_SKIP() << "needs a chief, a ps and a worker";
  cd::RemoteFunctions functions;
  const auto step = functions.add("sgd_step", [](cd::ClosureArguments& args) {
    cd::SGD optimizer(0.5);
    optimizer.apply_gradients({{args.tensor(1), args.variable(0)}});
    return cd::Tensor();
  });
  cd::MPIClusterResolver resolver(world, ps_for(world.size()));
  cd::ParameterServerOptions options;
  options.variable_partitioner = cd::FixedShardsPartitioner(3);
  cd::ParameterServerStrategy strategy(resolver, functions, options);
  if (!strategy.is_coordinator()) return;
  const int num_ps = strategy.num_ps();
  auto scope = strategy.scope();
  cd::Variable first(pattern(DataType::kFloat32, {10, 4}, 1), {.name = "kernel"});
  cd::Variable second(pattern(DataType::kFloat64, {2, 3}, 2), {.name = "small"});
  cd::Variable scalar(cd::Tensor::scalar(100.0f), {.name = "bias"});
  const auto kernel_shards = strategy.shards(first);
  ASSERT_EQ(kernel_shards.size(), 3u);
  const std::int64_t rows[3] = {4, 3, 3};
  std::int64_t begin = 0;
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(kernel_shards[static_cast<std::size_t>(s)].rows, rows[s]);
    EXPECT_EQ(kernel_shards[static_cast<std::size_t>(s)].row_begin, begin);
    EXPECT_EQ(kernel_shards[static_cast<std::size_t>(s)].ps, s % num_ps) << "shard " << s;
    begin += rows[s];
  }
  EXPECT_EQ(strategy.shards(second).size(), 2u);  // two rows
  EXPECT_EQ(strategy.shards(second)[0].ps, 3 % num_ps);
  EXPECT_EQ(strategy.shards(scalar).size(), 1u);
  {
    // colocate_vars_with: every shard on the ps of second's first shard;
    // the round robin does not advance.
    auto colocated = strategy.extended().colocate_vars_with(second);
    cd::Variable near(pattern(DataType::kFloat32, {6, 2}, 3), {.name = "near"});
    const auto near_shards = strategy.shards(near);
    ASSERT_EQ(near_shards.size(), 3u);
    for (const cd::VariableShard& shard : near_shards) EXPECT_EQ(shard.ps, 3 % num_ps);
    expect_equal(near.value(), pattern(DataType::kFloat32, {6, 2}, 3), "colocated variable");
  }
  cd::Variable after(pattern(DataType::kFloat32, {1, 2}, 4), {.name = "after"});
  EXPECT_EQ(strategy.shards(after)[0].ps, 6 % num_ps);
  expect_equal(first.value(), pattern(DataType::kFloat32, {10, 4}, 1), "sharded initial value");
  cd::ClusterCoordinator coordinator(strategy);
  const int steps = 5 * strategy.num_workers() + 1;
  for (int k = 0; k < steps; ++k) {
    coordinator.schedule(step, {first, filled(DataType::kFloat32, {10, 4}, 2)});
    coordinator.schedule(step, {second, filled(DataType::kFloat64, {2, 3}, 2)});
    coordinator.schedule(step, {scalar, cd::Tensor::scalar(2.0f)});
  }
  coordinator.join();
  // Each step subtracts 0.5 * 2 = 1 from every element (exact).
  const auto minus = [&](const cd::Tensor& t) {
    std::vector<double> v = t.to_doubles();
    for (double& x : v) x -= steps;
    return cd::Tensor::from_doubles(t.dtype(), v, t.shape());
  };
  expect_equal(first.value(), minus(pattern(DataType::kFloat32, {10, 4}, 1)), "kernel after SGD");
  expect_equal(second.value(), minus(pattern(DataType::kFloat64, {2, 3}, 2)), "small after SGD");
  expect_equal(scalar.value(), minus(cd::Tensor::scalar(100.0f)), "bias after SGD");
}

TEST(ParameterServer, ClosureErrorsAndMisuse) {
  Communicator world = Communicator::world();
  if (world.size() < 3) GTEST_SKIP() << "needs a chief, a ps and a worker";
  cd::RemoteFunctions functions;
  const auto fails = functions.add("fails", [](cd::ClosureArguments& args) -> cd::Tensor {
    throw std::runtime_error("bad step " +
                             std::to_string(args.tensor(0).values<std::int32_t>()[0]));
  });
  const auto twice = functions.add("twice", [](cd::ClosureArguments& args) {
    std::vector<std::int32_t> v(args.tensor(0).values<std::int32_t>().begin(),
                                args.tensor(0).values<std::int32_t>().end());
    for (auto& x : v) x *= 2;
    return cd::Tensor(v, args.tensor(0).shape());
  });
  const auto misread = functions.add("misread", [](cd::ClosureArguments& args) {
    return args.variable(0).value();  // argument 0 is a tensor
  });
  const auto dataset =
      functions.add_dataset("data", [](const cd::InputContext&) { return cd::Dataset::range(3); });
  cd::MPIClusterResolver resolver(world, ps_for(world.size()));
  cd::ParameterServerStrategy strategy(resolver, functions);
  if (!strategy.is_coordinator()) return;
  cd::ClusterCoordinator coordinator(strategy);
  cd::RemoteValue failed = coordinator.schedule(fails, {cd::Tensor::scalar<std::int32_t>(7)});
  try {
    failed.fetch();
    ADD_FAILURE() << "fetch of a failed closure returned";
  } catch (const cd::ClosureError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("closure 'fails'"), std::string::npos) << what;
    EXPECT_NE(what.find("on worker "), std::string::npos) << what;
    EXPECT_NE(what.find("bad step 7"), std::string::npos) << what;
  }
  EXPECT_EQ(failed.status(), cd::RemoteValue::Status::kFailed);
  EXPECT_THROW(coordinator.join(), cd::ClosureError);
  coordinator.join();  // the error was raised once and cleared
  cd::RemoteValue ok =
      coordinator.schedule(twice, {cd::Tensor(std::vector<std::int32_t>{1, 2, 3}, {3})});
  expect_equal(ok.fetch(), cd::Tensor(std::vector<std::int32_t>{2, 4, 6}, {3}), "twice");
  EXPECT_TRUE(coordinator.done());
  try {
    coordinator.schedule(misread, {cd::Tensor::scalar(1.0f)}).fetch();
    ADD_FAILURE() << "reading a tensor argument as a variable worked";
  } catch (const cd::ClosureError& error) {
    EXPECT_NE(std::string(error.what()).find("argument 0 is a tensor, read as a variable"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(coordinator.join(), cd::ClosureError);
  // Functions the workers cannot know.
  cd::RemoteFunctions other;
  const auto stranger = other.add("stranger", [](cd::ClosureArguments&) { return cd::Tensor(); });
  try {
    coordinator.schedule(stranger);
    ADD_FAILURE() << "an unregistered function was scheduled";
  } catch (const collective::InvalidArgumentError& error) {
    EXPECT_NE(std::string(error.what()).find("'stranger'"), std::string::npos) << error.what();
  }
  EXPECT_THROW(coordinator.schedule(dataset), collective::InvalidArgumentError);
  EXPECT_THROW(coordinator.create_per_worker_dataset(twice), collective::InvalidArgumentError);
  // A variable of another strategy.
  cd::MirroredStrategy mirrored(cd::MirroredStrategy::cpu_devices(1));
  cd::Variable foreign = [&] {
    auto scope = mirrored.scope();
    return cd::Variable(cd::Tensor::scalar(1.0f), {.name = "foreign"});
  }();
  EXPECT_THROW(coordinator.schedule(twice, {foreign}), collective::InvalidArgumentError);
}

TEST(ParameterServer, PerWorkerDatasets) {
  Communicator world = Communicator::world();
  if (world.size() < 3) GTEST_SKIP() << "needs a chief, a ps and a worker";
  cd::RemoteFunctions functions;
  const auto make = functions.add_dataset("numbers", [](const cd::InputContext& context) {
    const std::int64_t base = 1000 * context.input_pipeline_id();
    return cd::Dataset::range(base, base + 1000);
  });
  const auto next = functions.add("next", [](cd::ClosureArguments& args) {
    std::optional<cd::Element> element = args.iterator(0).get_next();
    const std::int64_t value = element ? (*element)[0].values<std::int64_t>()[0] : -1;
    return cd::Tensor(std::vector<std::int64_t>{args.worker_index(), value}, {2});
  });
  cd::MPIClusterResolver resolver(world, ps_for(world.size()));
  cd::ParameterServerStrategy strategy(resolver, functions);
  if (!strategy.is_coordinator()) return;
  cd::ClusterCoordinator coordinator(strategy);
  cd::PerWorkerDataset per_worker = coordinator.create_per_worker_dataset(make);
  for (int pass = 0; pass < 2; ++pass) {
    const cd::PerWorkerIterator iterator = per_worker.make_iterator();
    std::vector<cd::RemoteValue> values;
    for (int k = 0; k < 10 * strategy.num_workers(); ++k)
      values.push_back(coordinator.schedule(next, {iterator}));
    std::map<std::int64_t, std::vector<std::int64_t>> seen;
    for (const cd::Tensor& t : coordinator.fetch(values)) {
      seen[t.values<std::int64_t>()[0]].push_back(t.values<std::int64_t>()[1]);
    }
    for (const auto& [worker, numbers] : seen) {
      ASSERT_GE(worker, 0);
      ASSERT_LT(worker, strategy.num_workers());
      for (std::size_t i = 0; i < numbers.size(); ++i) {
        // A fresh iterator starts each worker's own dataset from its start.
        ASSERT_EQ(numbers[i], 1000 * worker + static_cast<std::int64_t>(i))
            << "pass " << pass << " worker " << worker << " element " << i;
      }
    }
  }
}

TEST(ParameterServer, RegistriesMustAgree) {
  Communicator world = Communicator::world();
  if (world.size() < 3) GTEST_SKIP() << "needs a chief, a ps and a worker";
  cd::RemoteFunctions functions;
  functions.add("a", [](cd::ClosureArguments&) { return cd::Tensor(); });
  functions.add(world.rank() == world.size() - 1 ? "c" : "b",
                [](cd::ClosureArguments&) { return cd::Tensor(); });
  cd::MPIClusterResolver resolver(world, ps_for(world.size()));
  try {
    cd::ParameterServerStrategy strategy(resolver, functions);
    ADD_FAILURE() << "different registries were accepted";
  } catch (const collective::MismatchError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("function 1 is 'b' on the chief"), std::string::npos) << what;
    EXPECT_NE(what.find("'c' on rank " + std::to_string(world.size() - 1)), std::string::npos)
        << what;
  }
  cd::MPIClusterResolver all_workers(world);
  EXPECT_THROW(cd::ParameterServerStrategy(all_workers, functions),
               collective::InvalidArgumentError);
}

// Two local replicas on every worker: each closure runs a step on both, the
// replicas' updates are reduced synchronously on the worker (by each
// variable's aggregation; SGD sums the gradients) and pushed to the ps once,
// while workers stay asynchronous to each other. Every value is a small
// multiple of 0.5, so every result is exact.
TEST(ParameterServer, LocalReplicasReduceBeforeOnePush) {
  Communicator world = Communicator::world();
  if (world.size() < 3) GTEST_SKIP() << "needs a chief, a ps and a worker";
  constexpr int kReplicas = 2;
  const std::vector<cd::Shape> shapes = {{5}, {300000}};  // in the message; through staging
  cd::RemoteFunctions functions;
  const auto step = functions.add("step_on_local_replicas", [](cd::ClosureArguments& args) {
    cd::Strategy& strategy = args.strategy();
    cd::Variable sum = args.variable(0), mean = args.variable(1), first = args.variable(2),
                 weights = args.variable(3);
    cd::SGD sgd(0.5);
    const cd::PerReplica<cd::Tensor> ids = strategy.run([&] {
      const int r = cd::get_replica_context()->local_replica_id();
      const cd::Tensor own = filled(DataType::kFloat32, sum.shape(), r + 1);
      (void)weights.value();  // every replica pulls, concurrently
      sum.assign_add(own);
      mean.assign_add(own);
      first.assign_add(own);
      sgd.apply_gradients({{own, weights}});
      return cd::Tensor(std::vector<float>{static_cast<float>(r)}, {1});
    });
    // How many replicas ran, and the sum of their ids.
    return cd::Tensor(
        std::vector<float>{static_cast<float>(ids.num_replicas()),
                           strategy.reduce(collective::ReduceOp::kSum, ids).values<float>()[0]},
        {2});
  });
  cd::MPIClusterResolver resolver(world, ps_for(world.size()));
  cd::ParameterServerOptions options;
  options.num_local_replicas = kReplicas;
  cd::ParameterServerStrategy strategy(resolver, functions, options);
  if (!strategy.is_coordinator()) return;
  EXPECT_EQ(strategy.extended().num_local_replicas(), kReplicas);
  const int steps = 3 * strategy.num_workers();
  auto scope = strategy.scope();
  cd::ClusterCoordinator coordinator(strategy);
  for (const cd::Shape& shape : shapes) {
    const cd::Tensor zeros = filled(DataType::kFloat32, shape, 0);
    cd::Variable sum(zeros, {.name = "sum", .aggregation = cd::VariableAggregation::kSum});
    cd::Variable mean(zeros, {.name = "mean", .aggregation = cd::VariableAggregation::kMean});
    cd::Variable first(
        zeros, {.name = "first", .aggregation = cd::VariableAggregation::kOnlyFirstReplica});
    cd::Variable weights(zeros, {.name = "weights"});
    std::vector<cd::RemoteValue> results;
    for (int s = 0; s < steps; ++s)
      results.push_back(coordinator.schedule(step, {sum, mean, first, weights}));
    coordinator.join();
    for (const cd::Tensor& result : coordinator.fetch(results)) {
      EXPECT_EQ(result.values<float>()[0], kReplicas) << "replicas per closure";
      EXPECT_EQ(result.values<float>()[1], kReplicas * (kReplicas - 1) / 2)
          << "sum of local replica ids";
    }
    // Per step: replicas add 1..K. SUM: K(K+1)/2, MEAN: (K+1)/2, first: 1;
    // SGD sums the gradients: -0.5 K(K+1)/2.
    const double sum_per_step = kReplicas * (kReplicas + 1) / 2.0;
    const std::string size = " (" + std::to_string(cd::num_elements(shape)) + " elements)";
    expect_equal(sum.value(), filled(DataType::kFloat32, shape, steps * sum_per_step),
                 "SUM variable" + size);
    expect_equal(mean.value(), filled(DataType::kFloat32, shape, steps * (kReplicas + 1) / 2.0),
                 "MEAN variable (pushed once per step)" + size);
    expect_equal(first.value(), filled(DataType::kFloat32, shape, steps),
                 "ONLY_FIRST_REPLICA variable" + size);
    expect_equal(weights.value(), filled(DataType::kFloat32, shape, -0.5 * steps * sum_per_step),
                 "SGD weights" + size);
  }
}

// gather and ReplicaContext::all_gather inside a scheduled function
// concatenate the worker's own replicas (workers never wait for each
// other), of different lengths: replica r gives r + 1 rows of value r.
TEST(ParameterServer, GatherStaysOnTheWorker) {
  Communicator world = Communicator::world();
  if (world.size() < 3) GTEST_SKIP() << "needs a chief, a ps and a worker";
  constexpr int kReplicas = 2;
  cd::RemoteFunctions functions;
  const auto step = functions.add("gather_on_local_replicas", [](cd::ClosureArguments& args) {
    cd::Strategy& strategy = args.strategy();
    const cd::PerReplica<cd::Tensor> inside = strategy.run([] {
      cd::ReplicaContext& context = *cd::get_replica_context();
      const int r = context.local_replica_id();
      const cd::Tensor rows = filled(DataType::kInt32, {r + 1, 2}, r);
      return context.all_gather(rows, 0);
    });
    return strategy.gather(inside, 0);
  });
  cd::MPIClusterResolver resolver(world, ps_for(world.size()));
  cd::ParameterServerOptions options;
  options.num_local_replicas = kReplicas;
  cd::ParameterServerStrategy strategy(resolver, functions, options);
  if (!strategy.is_coordinator()) return;
  auto scope = strategy.scope();
  cd::ClusterCoordinator coordinator(strategy);
  std::vector<cd::RemoteValue> results;
  for (int s = 0; s < 2 * strategy.num_workers(); ++s)
    results.push_back(coordinator.schedule(step, {}));
  coordinator.join();
  // Each replica's all_gather is [0 0; 1 1; 1 1]; the gather stacks both.
  const std::vector<std::int32_t> once = {0, 0, 1, 1, 1, 1};
  std::vector<std::int32_t> want = once;
  want.insert(want.end(), once.begin(), once.end());
  for (const cd::Tensor& result : coordinator.fetch(results)) {
    expect_equal(result, cd::Tensor(want, {6, 2}), "the gather of one worker's replicas");
  }
}

TEST(ParameterServerLayout, LocalReplicasMustBePositive) {
  Communicator world = Communicator::world();
  if (world.size() < 3) GTEST_SKIP() << "needs a chief, a ps and a worker";
  cd::RemoteFunctions functions;
  cd::MPIClusterResolver resolver(world, ps_for(world.size()));
  cd::ParameterServerOptions options;
  options.num_local_replicas = 0;
  try {
    cd::ParameterServerStrategy strategy(resolver, functions, options);
    ADD_FAILURE() << "rank " << world.rank() << ": num_local_replicas = 0 was accepted";
  } catch (const collective::InvalidArgumentError& error) {
    EXPECT_NE(std::string(error.what()).find("num_local_replicas must be at least 1, got 0"),
              std::string::npos)
        << error.what();
  }
}
