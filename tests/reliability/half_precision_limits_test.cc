// float16 and bfloat16 near their limits: every algorithm, forced, keeps
// partial sums and products in float32, divides MEAN before the one
// rounding, and so gives the exactly-rounded-once value of the exact
// result (docs/algorithms.md, Numerics). Before, ring, recursive_doubling
// and mpi rounded each partial to 16 bits: 3 x 40000 MEAN gave inf, and
// +60000 - 60000 + 60000 SUM gave inf on the ring. Every element of every
// rank's result is checked against the exact value rounded once, for
// all_reduce, reduce_scatter and reduce, deterministic or not, and for
// hierarchical on every layout of virtual nodes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "typed_buffer.h"
#include "virtual_nodes.h"

namespace collective {
namespace {

using testing::TypedBuffer;

struct LimitCase {
  Algorithm algorithm;
  CollectiveKind kind;
  bool deterministic;
  std::vector<int> nodes;  // virtual node sizes; empty: the real layout
};

std::vector<LimitCase> every_case(int size) {
  std::vector<LimitCase> cases;
  for (bool deterministic : {false, true}) {
    for (CollectiveKind kind :
         {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter, CollectiveKind::kReduce}) {
      cases.push_back({Algorithm::kRing, kind, deterministic, {}});
      // MPI fixes no order: it refuses deterministic calls.
      if (!deterministic) cases.push_back({Algorithm::kMpi, kind, false, {}});
    }
    cases.push_back({Algorithm::kRecursiveDoubling, CollectiveKind::kAllReduce, deterministic, {}});
    cases.push_back({Algorithm::kSharedMemory, CollectiveKind::kAllReduce, deterministic, {}});
    for (const std::vector<int>& nodes : testing_support::node_layouts(size)) {
      // Across nodes hierarchical sums per node first: not deterministic.
      if (deterministic && nodes.size() > 1) continue;
      cases.push_back({Algorithm::kHierarchical, CollectiveKind::kAllReduce, deterministic, nodes});
    }
  }
  return cases;
}

std::string describe(const LimitCase& c, DataType type, ReduceOp op, std::size_t count) {
  std::string text = std::string(to_string(c.kind)) + " " + std::string(to_string(c.algorithm)) +
                     (c.deterministic ? " deterministic " : " ") + std::string(to_string(type)) +
                     " " + std::string(to_string(op)) + " count " + std::to_string(count);
  if (!c.nodes.empty()) {
    text += " nodes";
    for (int n : c.nodes) text += " " + std::to_string(n);
  }
  return text;
}

// The exact result (computed in double, exact for these inputs), MEAN's
// quotient taken in float32 as the rule says, then rounded once to `type`.
double rounded_once(DataType type, ReduceOp op, double exact, int size) {
  float value = static_cast<float>(exact);
  if (op == ReduceOp::kMean) value /= static_cast<float>(size);
  TypedBuffer one(type, 1);
  one.set(0, value);
  return one.get(0);
}

class HalfPrecisionLimitsTest : public ::testing::Test {
 protected:
  Communicator& communicator_for(const LimitCase& c) {
    if (c.nodes.empty()) return world;
    for (auto& [nodes, comm] : virtual_layouts) {
      if (nodes == c.nodes) return comm;
    }
    virtual_layouts.emplace_back(c.nodes, testing_support::with_virtual_nodes(c.nodes));
    return virtual_layouts.back().second;
  }

  // One call of `c` in which element i of rank r is value(r, i); checks
  // every element this rank receives against the exact result rounded once.
  void check(const LimitCase& c, DataType type, ReduceOp op, std::size_t count,
             const std::function<double(int, std::size_t)>& value) {
    Communicator& comm = communicator_for(c);
    const int size = comm.size();
    const int rank = comm.rank();
    const auto p = static_cast<std::size_t>(size);
    const bool scatter = c.kind == CollectiveKind::kReduceScatter;
    const std::size_t input_count = scatter ? count * p : count;
    TypedBuffer input(type, input_count);
    for (std::size_t i = 0; i < input_count; ++i) input.set(i, value(rank, i));
    TypedBuffer output(type, count);
    output.poison();
    const int root = size - 1;
    if (c.kind == CollectiveKind::kAllReduce) {
      AllReduceOptions options;
      options.algorithm = c.algorithm;
      options.op = op;
      options.deterministic = c.deterministic;
      comm.all_reduce(input.data(), output.data(), count, type, options);
    } else if (scatter) {
      ReduceScatterOptions options;
      options.algorithm = c.algorithm;
      options.op = op;
      options.deterministic = c.deterministic;
      comm.reduce_scatter(input.data(), output.data(), count, type, options);
    } else {
      ReduceOptions options;
      options.algorithm = c.algorithm;
      options.op = op;
      options.deterministic = c.deterministic;
      options.root = root;
      comm.reduce(input.data(), output.data(), count, type, options);
      if (rank != root) return;
    }
    const std::size_t first = scatter ? static_cast<std::size_t>(rank) * count : 0;
    for (std::size_t i = 0; i < count; ++i) {
      double exact = op == ReduceOp::kProd ? 1.0 : 0.0;
      for (int r = 0; r < size; ++r) {
        exact = op == ReduceOp::kProd ? exact * value(r, first + i) : exact + value(r, first + i);
      }
      const double expected = rounded_once(type, op, exact, size);
      const double actual = output.get(i);
      ASSERT_EQ(actual, expected) << describe(c, type, op, count) << ": rank " << rank << " index "
                                  << i << " expected " << expected << " actual " << actual;
    }
  }

  void check_every_case(DataType type, ReduceOp op,
                        const std::function<double(int, std::size_t)>& value) {
    for (const LimitCase& c : every_case(world.size())) {
      // One rank's whole input, carried, several ring segments (with
      // COLLECTIVE_RING_SEGMENT_BYTES small) and past the carried sizes.
      for (std::size_t count :
           {std::size_t{1}, std::size_t{37}, std::size_t{4099}, std::size_t{40000}}) {
        check(c, type, op, count, value);
        if (HasFatalFailure()) return;
      }
    }
  }

  Communicator world = Communicator::world();
  std::vector<std::pair<std::vector<int>, Communicator>> virtual_layouts;
};

constexpr double kNearFloat16Max = 40000;  // float16's largest is 65504

TEST_F(HalfPrecisionLimitsTest, Float16MeanNearTheLimitIsTheValue) {
  check_every_case(DataType::kFloat16, ReduceOp::kMean,
                   [](int, std::size_t) { return kNearFloat16Max; });
}

// +60000, -60000, +60000, ... by rank, the sign alternating with the
// index too, so every order of partial sums occurs somewhere: the exact
// sum (0 or +-60000) whatever the order.
TEST_F(HalfPrecisionLimitsTest, Float16SumOfOpposedValuesNearTheLimitIsExact) {
  check_every_case(DataType::kFloat16, ReduceOp::kSum, [](int r, std::size_t i) {
    return (static_cast<std::size_t>(r) + i) % 2 == 0 ? 60000.0 : -60000.0;
  });
}

// 256, 256, 1/256, 1/256 by rank (rotated by index): a partial product of
// 65536 is beyond float16, the whole product at 3 and 4 ranks is not.
TEST_F(HalfPrecisionLimitsTest, Float16ProductWhosePartialsOverflowIsExact) {
  check_every_case(DataType::kFloat16, ReduceOp::kProd, [](int r, std::size_t i) {
    return (static_cast<std::size_t>(r) + i) % 4 < 2 ? 256.0 : 1.0 / 256.0;
  });
}

// One rank holds 2048 (float16's spacing there is 2), the others 1: the
// partials 2049, 2050, ... rounded each time lose the ones; kept in float32
// the sum is rounded once (2050 at 3 ranks, 2052 at 4).
TEST_F(HalfPrecisionLimitsTest, Float16SumRoundsOnceNotPerPartial) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
    check_every_case(DataType::kFloat16, op, [this](int r, std::size_t i) {
      return static_cast<std::size_t>(r) == i % static_cast<std::size_t>(world.size()) ? 2048.0
                                                                                       : 1.0;
    });
  }
}

// bfloat16 has float32's range, so the same rule matters for its 8-bit
// significand: 256 and ones give 258 at 3 ranks, 260 at 4 (not 256).
TEST_F(HalfPrecisionLimitsTest, BFloat16SumRoundsOnceNotPerPartial) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
    check_every_case(DataType::kBFloat16, op, [this](int r, std::size_t i) {
      return static_cast<std::size_t>(r) == i % static_cast<std::size_t>(world.size()) ? 256.0
                                                                                       : 1.0;
    });
  }
}

// 2^100 twice and 2^-100 twice: bfloat16 products stay within float32.
TEST_F(HalfPrecisionLimitsTest, BFloat16ProductIsExact) {
  check_every_case(DataType::kBFloat16, ReduceOp::kProd, [](int r, std::size_t i) {
    return (static_cast<std::size_t>(r) + i) % 4 < 2 ? std::ldexp(1.0, 60) : std::ldexp(1.0, -60);
  });
}

}  // namespace
}  // namespace collective
