// The exact sweep: every collective case (cases/collective_case.h, the
// same descriptions collective_bench checks with) x algorithm x dtype x op x
// count x in-place (x root), one test per combination, every element of
// every rank's result checked. A test's name says its combination, so one
// can run alone (mpirun -np 3 collective_mpi_tests --gtest_filter=
// 'Sweep/CollectiveSweep.Exact/AllReduce_ring_float32_sum_count7_inplace').
// The algorithms of a combination are those whose supports() serves it on
// this communicator (Communicator::choose_algorithm with the algorithm
// forced), asked when GoogleTest evaluates the parameters, after MPI
// started (mpi_test_main.cc): an algorithm that learns a collective joins
// the sweep without an edit, and none is listed where it cannot run.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "collective_case.h"

namespace collective {
namespace {

using cases::CallArgs;
using cases::CollectiveCase;
using cases::Geometry;
using cases::Region;
using cases::WrongElements;

// 0, 1, odd, one short of a power of two, and past 2^20 (every algorithm's
// chunking, segment and slot boundaries at these sizes).
const std::vector<std::size_t> kCounts = {0, 1, 7, 1023, (std::size_t{1} << 20) + 3};
// With per-rank counts rank 0 holds 4 times the count: past 2^18 keeps its
// block at the size of the others' largest, and the sweep's time near theirs.
const std::vector<std::size_t> kPerRankCounts = {0, 1, 7, 1023, (std::size_t{1} << 18) + 3};
// Per-rank counts: rank 0 with 4 times the others', and with none.
const std::vector<std::size_t> kUneven = {4, 0};
const DataType kTypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                           DataType::kFloat64, DataType::kInt8,     DataType::kUInt8,
                           DataType::kInt32,   DataType::kInt64};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                         ReduceOp::kProd};
// The bitwise ops reduce the integer types only (the floating ones are refused).
const ReduceOp kBitwiseOps[] = {ReduceOp::kBitwiseAnd, ReduceOp::kBitwiseOr, ReduceOp::kBitwiseXor};

// Roots named by place, so that a test has one name at every rank count.
enum class Root { kNone, kFirst, kLast, kMiddle };

int root_rank(Root root, int ranks) {
  switch (root) {
    case Root::kNone:
    case Root::kFirst: return 0;
    case Root::kLast: return ranks - 1;
    case Root::kMiddle: return ranks / 2;
  }
  return 0;
}

struct SweepCase {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  Algorithm algorithm = Algorithm::kAuto;
  DataType type = DataType::kFloat32;
  std::optional<ReduceOp> op;  // the reducing collectives
  std::size_t count = 0;
  Root root = Root::kNone;  // the rooted collectives
  std::size_t uneven = 1;   // the collectives with per-rank counts (Shape::uneven)
  bool in_place = false;
};

// all_reduce -> AllReduce
std::string camel_case(std::string_view name) {
  std::string result;
  bool upper = true;
  for (const char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    result += upper ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return result;
}

std::string root_name(Root root) {
  switch (root) {
    case Root::kNone: return "";
    case Root::kFirst: return "_rootfirst";
    case Root::kLast: return "_rootlast";
    case Root::kMiddle: return "_rootmiddle";
  }
  return "";
}

// AllReduce_ring_float32_sum_count7_inplace
std::string test_name(const ::testing::TestParamInfo<SweepCase>& info) {
  const SweepCase& c = info.param;
  std::string name = camel_case(cases::make_collective_case(c.kind)->name()) + "_" +
                     std::string(to_string(c.algorithm)) + "_" + std::string(to_string(c.type));
  if (c.op) name += "_" + std::string(to_string(*c.op));
  name += "_count" + std::to_string(c.count) + root_name(c.root);
  if (c.uneven != 1) name += "_uneven" + std::to_string(c.uneven);
  name += c.in_place ? "_inplace" : "_outofplace";
  return name;
}

// Rooted collectives run at the first and the last rank; those that only
// copy (cheap) also at the middle one.
std::vector<Root> roots_of(const CollectiveCase& c) {
  if (!c.rooted()) return {Root::kNone};
  if (c.reduces()) return {Root::kFirst, Root::kLast};
  return {Root::kFirst, Root::kLast, Root::kMiddle};
}

// Whether the combination's (named) algorithm serves it on `communicator`.
bool served(const Communicator& communicator, const SweepCase& sweep) {
  try {
    communicator.choose_algorithm(sweep.kind, sweep.count, sweep.type, sweep.algorithm);
    return true;
  } catch (const UnsupportedError&) {
    return false;
  }
}

// Evaluated by every rank alike, while GoogleTest registers the tests.
std::vector<SweepCase> every_combination() {
  const Communicator world = Communicator::world();
  std::vector<SweepCase> result;
  for (const CollectiveKind kind : cases::kinds_with_cases()) {
    const auto c = cases::make_collective_case(kind);
    std::vector<bool> placements;
    if (c->has_out_of_place()) placements.push_back(false);
    if (c->has_in_place()) placements.push_back(true);
    const std::vector<std::size_t> uneven =
        c->per_rank_counts() ? kUneven : std::vector<std::size_t>{1};
    for (const DataType type : kTypes) {
      std::vector<std::optional<ReduceOp>> ops{std::nullopt};
      if (c->reduces()) {
        ops.assign(std::begin(kOps), std::end(kOps));
        if (is_integer(type)) ops.insert(ops.end(), std::begin(kBitwiseOps), std::end(kBitwiseOps));
      }
      for (const auto& op : ops) {
        for (const std::size_t count : c->per_rank_counts() ? kPerRankCounts : kCounts) {
          for (const Root root : roots_of(*c)) {
            for (const std::size_t factor : uneven) {
              for (const bool in_place : placements) {
                SweepCase sweep{kind, Algorithm::kAuto, type, op, count, root, factor, in_place};
                // The algorithms that serve it, and auto where it has a
                // choice among them (with one, auto is that one again).
                std::vector<SweepCase> served_by;
                for (int a = 1; a < kNumAlgorithms; ++a) {
                  sweep.algorithm = static_cast<Algorithm>(a);
                  if (served(world, sweep)) served_by.push_back(sweep);
                }
                if (served_by.size() > 1) {
                  sweep.algorithm = Algorithm::kAuto;
                  result.push_back(sweep);
                }
                result.insert(result.end(), served_by.begin(), served_by.end());
              }
            }
          }
        }
      }
    }
  }
  return result;
}

// What GoogleTest prints for a parameter: the combination, as in its name.
void PrintTo(const SweepCase& sweep, std::ostream* out) {
  *out << test_name(::testing::TestParamInfo<SweepCase>(sweep, 0));
}

class CollectiveSweep : public ::testing::TestWithParam<SweepCase> {
 protected:
  // One communicator for the whole sweep: a new one per test would cost
  // a duplicate and a topology exchange each time.
  static void SetUpTestSuite() {
    communicator_ = std::make_unique<Communicator>(Communicator::world());
  }
  static void TearDownTestSuite() {
    communicator_.reset();
    send_ = {};
    recv_ = {};
  }
  static Communicator& comm() { return *communicator_; }

  // Buffers kept from test to test (fresh pages for every megabyte-sized
  // test cost more than its collective): every test fills what it reads,
  // the whole receive buffer and its inputs. Never empty, so that a count
  // of 0 passes real pointers.
  static std::byte* send_buffer(std::size_t bytes) { return at_least(send_, bytes); }
  static std::byte* recv_buffer(std::size_t bytes) { return at_least(recv_, bytes); }

 private:
  static std::byte* at_least(std::vector<std::byte>& buffer, std::size_t bytes) {
    if (buffer.size() < bytes + 64) buffer.resize(bytes + 64);
    return buffer.data();
  }
  static inline std::unique_ptr<Communicator> communicator_;
  static inline std::vector<std::byte> send_;
  static inline std::vector<std::byte> recv_;
};

TEST_P(CollectiveSweep, Exact) {
  const SweepCase& sweep = GetParam();
  Communicator& communicator = comm();
  const auto c = cases::make_collective_case(sweep.kind);
  const int ranks = communicator.size();
  const std::size_t element = element_size(sweep.type);
  const cases::Shape shape{ranks, communicator.rank(), sweep.uneven};
  const Geometry geometry = c->geometry(sweep.count, element, shape);
  std::byte* send = send_buffer(geometry.send_elements * element);
  std::byte* recv = recv_buffer(geometry.recv_elements * element);

  CallArgs args;
  args.send_base = send;
  args.recv_base = recv;
  args.count = sweep.count;
  args.type = sweep.type;
  args.op = sweep.op.value_or(ReduceOp::kSum);
  args.root = root_rank(sweep.root, ranks);
  args.algorithm = sweep.algorithm;
  args.in_place = sweep.in_place;
  args.rank = communicator.rank();
  args.ranks = ranks;
  args.uneven = sweep.uneven;
  c->place(args);

  // A value no correct result holds, then this rank's inputs (in place,
  // they overwrite part of it).
  cases::fill_sentinel(sweep.type, Region{recv, geometry.recv_elements, 0});
  for (const Region& input : c->inputs(args)) {
    cases::fill_inputs(c->pattern(args), args.rank, input);
  }
  c->run(communicator, args);

  const WrongElements wrong = c->check(args);
  EXPECT_EQ(wrong.count, 0u) << cases::describe_wrong(wrong, args.rank);
  if (sweep.algorithm != Algorithm::kAuto) {
    EXPECT_EQ(communicator.last_algorithm(), sweep.algorithm)
        << "rank " << args.rank << " ran " << to_string(communicator.last_algorithm());
  }
}

INSTANTIATE_TEST_SUITE_P(Sweep, CollectiveSweep, ::testing::ValuesIn(every_combination()),
                         test_name);

// The sweep leaves out what an algorithm refuses: the MPI passthrough must
// serve every collective with a case, so none is left unswept.
TEST(SweepCoverage, MpiServesEveryCase) {
  Communicator communicator = Communicator::world();
  for (const CollectiveKind kind : cases::kinds_with_cases()) {
    EXPECT_NO_THROW(communicator.choose_algorithm(kind, 7, DataType::kFloat32, Algorithm::kMpi))
        << to_string(kind);
  }
}

TEST(SweepCoverage, Barrier) {
  Communicator communicator = Communicator::world();
  for (Algorithm algorithm : {Algorithm::kAuto, Algorithm::kRecursiveDoubling, Algorithm::kMpi}) {
    BarrierOptions options;
    options.algorithm = algorithm;
    for (int i = 0; i < 20; ++i) communicator.barrier(options);
  }
}

}  // namespace
}  // namespace collective
