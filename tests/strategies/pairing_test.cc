// MultiWorkerMirroredStrategy under mpirun (1 to 4 ranks): cross-worker
// calls that belong to different steps, or to different purposes, must never
// be reduced together. A worker whose run() failed and that carries on, and a
// sync-on-read read made on one worker only, raise MismatchError on every
// worker, naming what each worker was doing; no step returns a wrong sum and
// no worker is left waiting. Expected values are exact (small integers).
#include <gtest/gtest.h>
#include <mpi.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "strategies_test_util.h"

namespace collective::distribute {
namespace {

using testing::floats;
using testing::tensor_equals;

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

// Short enough that a worker left waiting (the defect) fails the test in
// seconds; long enough for an oversubscribed 2-core machine.
CommunicationOptions test_options() {
  CommunicationOptions options;
  options.timeout_seconds = 20;
  return options;
}

class Pairing : public ::testing::TestWithParam<int> {
 protected:
  int k() const { return GetParam(); }
  MultiWorkerMirroredStrategy strategy{test_options(), MirroredStrategy::cpu_devices(GetParam())};
};

// Worker w's value in step s (one float per replica): 100 s + w + 1.
float step_value(int step, int worker) { return static_cast<float>(100 * step + worker + 1); }

// The sum over every replica of every worker for step s.
double step_sum(int step, int workers, int replicas) {
  double sum = 0;
  for (int w = 0; w < workers; ++w) sum += replicas * static_cast<double>(step_value(step, w));
  return sum;
}

// The last worker's step 2 fails before its all-reduce (a bad batch); every
// worker catches each step's error and carries on, as a loop that skips bad
// batches does. Before, the skipping worker's step 3 was reduced with the
// others' step 2: wrong sums on every worker, then a timeout at the end.
TEST_P(Pairing, AWorkerThatSkipsAFailedStepIsAnErrorOnEveryWorker) {
  if (world_size() == 1) GTEST_SKIP() << "needs two workers";
  const int rank = world_rank();
  const int skipper = world_size() - 1;
  constexpr int kSteps = 5;
  std::vector<std::optional<std::string>> errors(kSteps + 1);
  std::vector<std::optional<std::string>> mismatches(kSteps + 1);
  for (int step = 1; step <= kSteps; ++step) {
    try {
      const PerReplica<Tensor> sums = strategy.run([&] {
        if (rank == skipper && step == 2) throw std::runtime_error("bad batch");
        return get_replica_context()->all_reduce(ReduceOp::kSum, floats({step_value(step, rank)}));
      });
      for (int r = 0; r < k(); ++r) {
        EXPECT_TRUE(tensor_equals(sums[static_cast<std::size_t>(r)], DataType::kFloat32, {1},
                                  {step_sum(step, world_size(), k())},
                                  "rank " + std::to_string(rank) + " step " + std::to_string(step) +
                                      " replica " + std::to_string(r)));
      }
    } catch (const MismatchError& error) {
      mismatches[static_cast<std::size_t>(step)] = error.what();
    } catch (const std::exception& error) {
      errors[static_cast<std::size_t>(step)] = error.what();
    }
  }
  // The skipping worker: its own failure in step 2, the pairing error in
  // step 3. The others: the pairing error in step 2, where they waited.
  const int first_mismatch = rank == skipper ? 3 : 2;
  if (rank == skipper) {
    ASSERT_TRUE(errors[2].has_value()) << "rank " << rank << ": step 2 did not fail";
    EXPECT_NE(errors[2]->find("bad batch"), std::string::npos) << *errors[2];
  }
  for (int step = 1; step < first_mismatch; ++step) {
    if (rank == skipper && step == 2) continue;
    EXPECT_FALSE(mismatches[static_cast<std::size_t>(step)].has_value())
        << "rank " << rank << " step " << step << ": "
        << *mismatches[static_cast<std::size_t>(step)];
  }
  const std::optional<std::string>& first = mismatches[static_cast<std::size_t>(first_mismatch)];
  ASSERT_TRUE(first.has_value()) << "rank " << rank << ": no MismatchError in step "
                                 << first_mismatch
                                 << (errors[first_mismatch] ? ", but: " + *errors[first_mismatch]
                                                            : "");
  // Both sides named: the skipper's step 3 and the others' step 2.
  for (const std::string& needle :
       std::vector<std::string>{"worker " + std::to_string(skipper) + ": step 3", "step 2",
                                "ReplicaContext.all_reduce"}) {
    EXPECT_NE(first->find(needle), std::string::npos)
        << "rank " << rank << ": the error does not name \"" << needle << "\": " << *first;
  }
  // Out of step for good: every later step fails at once, on every worker,
  // with no wrong sum and without waiting for a peer.
  for (int step = first_mismatch + 1; step <= kSteps; ++step) {
    ASSERT_TRUE(mismatches[static_cast<std::size_t>(step)].has_value())
        << "rank " << rank << " step " << step << " did not fail"
        << (errors[step] ? ": " + *errors[step] : "");
    EXPECT_NE(mismatches[static_cast<std::size_t>(step)]->find("out of step"), std::string::npos)
        << *mismatches[static_cast<std::size_t>(step)];
  }
  EXPECT_THROW(strategy.reduce(ReduceOp::kMax, floats({1})), MismatchError);
}

// Only the chief reads a sync-on-read variable after step 1 (say, to log
// it); the others go on to step 2. Before, the chief's read was reduced with
// the others' step-2 all-reduce (11 instead of 20 at 2 workers).
TEST_P(Pairing, ASyncOnReadReadOnOneWorkerIsAnErrorOnEveryWorker) {
  if (world_size() == 1) GTEST_SKIP() << "needs two workers";
  const int rank = world_rank();
  auto scope = strategy.scope();
  SyncOnReadVariable total(floats({0}),
                           {.name = "total", .aggregation = VariableAggregation::kSum});
  const auto step = [&](int s) {
    return strategy.run([&] {
      total.assign_add(floats({10}));
      return get_replica_context()->all_reduce(ReduceOp::kSum, floats({step_value(s, rank)}));
    });
  };
  const PerReplica<Tensor> first = step(1);
  for (int r = 0; r < k(); ++r) {
    EXPECT_TRUE(tensor_equals(first[static_cast<std::size_t>(r)], DataType::kFloat32, {1},
                              {step_sum(1, world_size(), k())}, "step 1"));
  }
  std::optional<std::string> mismatch;
  try {
    if (rank == 0) {
      const Tensor value = total.value();
      ADD_FAILURE() << "rank 0: the one-sided read returned " << value.debug_string()
                    << " (the sum over every replica is " << 10 * k() * world_size() << ")";
    } else {
      const PerReplica<Tensor> second = step(2);
      ADD_FAILURE() << "rank " << rank << ": step 2 returned " << second[0].debug_string()
                    << " although worker 0 never made step 2's all-reduce";
    }
  } catch (const MismatchError& error) {
    mismatch = error.what();
  }
  ASSERT_TRUE(mismatch.has_value()) << "rank " << rank << ": no MismatchError";
  for (const std::string& needle :
       {std::string("worker 0: after step 1"), std::string("'total'"), std::string("step 2"),
        std::string("ReplicaContext.all_reduce")}) {
    EXPECT_NE(mismatch->find(needle), std::string::npos)
        << "rank " << rank << ": the error does not name \"" << needle << "\": " << *mismatch;
  }
  // The chief's step 2 now fails at once instead of waiting for workers
  // that already left it.
  if (rank == 0) {
    EXPECT_THROW(step(2), MismatchError);
  }
}

// Every worker reading the variable, and the same calls on every worker,
// still work (the pairing check is no obstacle to a correct program).
TEST_P(Pairing, ReadsOnEveryWorkerBetweenStepsStillReduce) {
  auto scope = strategy.scope();
  SyncOnReadVariable total(floats({0}),
                           {.name = "total", .aggregation = VariableAggregation::kSum});
  for (int s = 1; s <= 3; ++s) {
    const PerReplica<Tensor> sums = strategy.run([&] {
      total.assign_add(floats({10}));
      return get_replica_context()->all_reduce(ReduceOp::kSum,
                                               floats({step_value(s, world_rank())}));
    });
    EXPECT_TRUE(tensor_equals(sums[0], DataType::kFloat32, {1}, {step_sum(s, world_size(), k())},
                              "step " + std::to_string(s)));
    EXPECT_TRUE(tensor_equals(total.value(), DataType::kFloat32, {1},
                              {10.0 * s * k() * world_size()},
                              "total after step " + std::to_string(s)));
  }
}

INSTANTIATE_TEST_SUITE_P(LocalReplicas, Pairing, ::testing::Values(1, 2),
                         [](const auto& info) { return "k" + std::to_string(info.param); });

}  // namespace
}  // namespace collective::distribute
