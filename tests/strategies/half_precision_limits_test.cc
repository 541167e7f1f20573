// float16 and bfloat16 near their limits in the strategies layer (1 to 4
// workers under mpirun): MirroredStrategy with 2-4 local replicas and every
// cross-device op, MultiWorkerMirroredStrategy (auto, ring, deterministic;
// 1 and 2 local replicas), through Strategy::reduce (with and without an
// axis), batch_reduce and ReplicaContext::all_reduce. Every partial (a
// replica's sum along an axis, the local replicas' sum, a worker's) stays
// float32 and MEAN divides before the one rounding, so 40000 on every
// replica has the MEAN 40000 (it was inf), and every element equals the
// exact result rounded once.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>

#include "strategies_test_util.h"

namespace collective::distribute {
namespace {

using testing::tensor_equals;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// Element i of global replica g.
using ValueFn = std::function<double(int g, std::size_t i)>;

struct Scenario {
  std::string name;
  DataType type;
  ReduceOp op;
  ValueFn value;
};

std::vector<Scenario> scenarios() {
  return {
      {"float16 MEAN of 40000", DataType::kFloat16, ReduceOp::kMean,
       [](int, std::size_t) { return 40000.0; }},
      {"float16 SUM of +-60000", DataType::kFloat16, ReduceOp::kSum,
       [](int g, std::size_t i) {
         return (static_cast<std::size_t>(g) + i) % 2 == 0 ? 60000.0 : -60000.0;
       }},
      {"float16 PROD of 256 and 1/256", DataType::kFloat16, ReduceOp::kProd,
       [](int g, std::size_t i) {
         return (static_cast<std::size_t>(g) + i) % 4 < 2 ? 256.0 : 1.0 / 256.0;
       }},
      {"bfloat16 SUM of 256 and ones", DataType::kBFloat16, ReduceOp::kSum,
       [](int g, std::size_t i) { return static_cast<std::size_t>(g) == i % 5 ? 256.0 : 1.0; }},
      {"bfloat16 MEAN of 256 and ones", DataType::kBFloat16, ReduceOp::kMean,
       [](int g, std::size_t i) { return static_cast<std::size_t>(g) == i % 5 ? 256.0 : 1.0; }},
  };
}

// The exact result over n replicas (exact in double for these inputs),
// MEAN's quotient in float32, rounded once to the type.
std::vector<double> expected(const Scenario& s, int n, std::size_t count) {
  std::vector<double> want(count);
  for (std::size_t i = 0; i < count; ++i) {
    double exact = s.op == ReduceOp::kProd ? 1.0 : 0.0;
    for (int g = 0; g < n; ++g)
      exact = s.op == ReduceOp::kProd ? exact * s.value(g, i) : exact + s.value(g, i);
    float value = static_cast<float>(exact);
    if (s.op == ReduceOp::kMean) value /= static_cast<float>(n);
    want[i] = Tensor::from_doubles(s.type, {value}, {1}).to_doubles()[0];
  }
  return want;
}

Tensor replica_tensor(const Scenario& s, int g, std::size_t count) {
  std::vector<double> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = s.value(g, i);
  return Tensor::from_doubles(s.type, v, {static_cast<std::int64_t>(count)});
}

// Every way the strategy reduces: Strategy::reduce, batch_reduce of two
// values at once, ReplicaContext::all_reduce inside run(), and the MEAN
// along an axis of 3 rows of the value per replica (each replica's own
// sum along the axis exceeds float16 too). first_replica: this worker's
// first global replica id; n: replicas in sync.
void check_strategy(Strategy& strategy, int local_replicas, int first_replica, int n,
                    const std::string& what) {
  for (const Scenario& s : scenarios()) {
    for (std::size_t count : {std::size_t{1}, std::size_t{37}, std::size_t{3001}}) {
      const std::string label = what + ", " + s.name + ", count " + std::to_string(count) +
                                ", rank " + std::to_string(world_rank());
      const std::vector<double> want = expected(s, n, count);
      const Shape shape{static_cast<std::int64_t>(count)};
      std::vector<Tensor> locals;
      for (int r = 0; r < local_replicas; ++r)
        locals.push_back(replica_tensor(s, first_replica + r, count));
      const PerReplica<Tensor> value(locals);

      ASSERT_TRUE(tensor_equals(strategy.reduce(s.op, value), s.type, shape, want,
                                label + ", Strategy::reduce"));

      const std::vector<Tensor> batch = strategy.extended().batch_reduce_to(s.op, {value, value});
      for (const Tensor& t : batch) {
        ASSERT_TRUE(tensor_equals(t, s.type, shape, want, label + ", batch_reduce"));
      }

      const PerReplica<Tensor> in_run = strategy.run([&] {
        const int g = get_replica_context()->replica_id_in_sync_group();
        return get_replica_context()->all_reduce(s.op, replica_tensor(s, g, count));
      });
      for (const Tensor& t : in_run.values()) {
        ASSERT_TRUE(tensor_equals(t, s.type, shape, want, label + ", ReplicaContext::all_reduce"));
      }

      if (s.op != ReduceOp::kMean) continue;
      // 3 rows per replica, all the replica's value: the mean over the
      // 3n rows is the mean over the replicas.
      std::vector<Tensor> rows;
      for (int r = 0; r < local_replicas; ++r) {
        std::vector<double> v;
        for (int row = 0; row < 3; ++row) {
          for (std::size_t i = 0; i < count; ++i) v.push_back(s.value(first_replica + r, i));
        }
        rows.push_back(Tensor::from_doubles(s.type, v, {3, static_cast<std::int64_t>(count)}));
      }
      std::vector<double> want_rows(count);
      for (std::size_t i = 0; i < count; ++i) {
        double exact = 0;
        for (int g = 0; g < n; ++g) exact += 3 * s.value(g, i);
        const float mean = static_cast<float>(exact) / static_cast<float>(3 * n);
        want_rows[i] = Tensor::from_doubles(s.type, {mean}, {1}).to_doubles()[0];
      }
      ASSERT_TRUE(tensor_equals(strategy.reduce(s.op, PerReplica<Tensor>(rows), 0), s.type, shape,
                                want_rows, label + ", Strategy::reduce along axis 0"));
    }
  }
}

// Every cross-device op of MirroredStrategy, 2-4 local replicas, in each
// process on its own.
TEST(HalfPrecisionLimits, MirroredStrategyEveryCrossDeviceOp) {
  for (int replicas = 2; replicas <= 4; ++replicas) {
    const std::vector<std::pair<std::string, std::shared_ptr<CrossDeviceOps>>> ops = {
        {"ReductionToOneDevice", std::make_shared<ReductionToOneDevice>()},
        {"HierarchicalCopyAllReduce", std::make_shared<HierarchicalCopyAllReduce>(1)},
        {"HierarchicalCopyAllReduce(2 packs)", std::make_shared<HierarchicalCopyAllReduce>(2)},
        {"NcclAllReduce", std::make_shared<NcclAllReduce>(1)},
    };
    for (const auto& [name, op] : ops) {
      MirroredStrategy strategy(MirroredStrategy::cpu_devices(replicas), op);
      check_strategy(strategy, replicas, 0, replicas,
                     "MirroredStrategy x" + std::to_string(replicas) + " " + name);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Across the workers of the job (1-4), with 1 and 2 local replicas each.
TEST(HalfPrecisionLimits, MultiWorkerMirroredStrategy) {
  int workers = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &workers);
  for (int local = 1; local <= 2; ++local) {
    for (int form = 0; form < 3; ++form) {
      CommunicationOptions options;
      if (form == 1) options.implementation = CommunicationImplementation::kRing;
      if (form == 2) options.deterministic = true;
      MultiWorkerMirroredStrategy strategy(options, MirroredStrategy::cpu_devices(local));
      const std::string what = std::string("MultiWorkerMirroredStrategy ") +
                               (form == 0   ? "auto"
                                : form == 1 ? "ring"
                                            : "deterministic") +
                               " x" + std::to_string(workers) + " workers x" +
                               std::to_string(local);
      check_strategy(strategy, local, world_rank() * local, workers * local, what);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace collective::distribute
