// Numerics every algorithm must agree on (types.h documents them): NaN and
// infinities per op, the float16/bfloat16 rounding of each combination,
// and MEAN on integers (the wrapped SUM divided with truncation toward
// zero). Expected values follow IEEE arithmetic in double, then one
// rounding to the element type.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "typed_buffer.h"

namespace collective {
namespace {

using testing::TypedBuffer;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct NumericsCase {
  Algorithm algorithm;
  CollectiveKind kind;
};

std::vector<NumericsCase> reducing_cases() {
  return {{Algorithm::kRing, CollectiveKind::kAllReduce},
          {Algorithm::kRecursiveDoubling, CollectiveKind::kAllReduce},
          {Algorithm::kMpi, CollectiveKind::kAllReduce},
          {Algorithm::kRing, CollectiveKind::kReduceScatter},
          {Algorithm::kMpi, CollectiveKind::kReduceScatter},
          {Algorithm::kRing, CollectiveKind::kReduce},
          {Algorithm::kMpi, CollectiveKind::kReduce}};
}

class NumericsTest : public ::testing::Test {
 protected:
  // Runs one reduction in which element i of rank r is value(r, i), and
  // returns this rank's result as doubles (the whole vector for all_reduce,
  // this rank's block for reduce_scatter, the root's for reduce, which uses
  // root size-1). Empty when this rank gets no result.
  template <typename Value>
  std::vector<double> reduce(const NumericsCase& c, DataType type, ReduceOp op, std::size_t count,
                             Value value) {
    const int size = comm.size();
    const int rank = comm.rank();
    const std::size_t input_count =
        c.kind == CollectiveKind::kReduceScatter ? count * static_cast<std::size_t>(size) : count;
    TypedBuffer input(type, input_count);
    for (std::size_t i = 0; i < input_count; ++i) input.set(i, value(rank, i % count));
    TypedBuffer output(type, count);
    output.poison();
    switch (c.kind) {
      case CollectiveKind::kAllReduce: {
        AllReduceOptions options;
        options.algorithm = c.algorithm;
        options.op = op;
        comm.all_reduce(input.data(), output.data(), count, type, options);
        break;
      }
      case CollectiveKind::kReduceScatter: {
        ReduceScatterOptions options;
        options.algorithm = c.algorithm;
        options.op = op;
        comm.reduce_scatter(input.data(), output.data(), count, type, options);
        break;
      }
      case CollectiveKind::kAllGather:
      case CollectiveKind::kBroadcast:
      case CollectiveKind::kReduce:
      case CollectiveKind::kBarrier:
      case CollectiveKind::kAllToAll:
      case CollectiveKind::kAllToAllV:
      case CollectiveKind::kAllGatherV:
      case CollectiveKind::kReduceScatterV:
      case CollectiveKind::kGather:
      case CollectiveKind::kGatherV:
      case CollectiveKind::kScatter:
      case CollectiveKind::kScatterV:
      default: {
        ReduceOptions options;
        options.algorithm = c.algorithm;
        options.op = op;
        options.root = size - 1;
        comm.reduce(input.data(), output.data(), count, type, options);
        if (rank != size - 1) return {};
        break;
      }
    }
    std::vector<double> result(count);
    for (std::size_t i = 0; i < count; ++i) result[i] = output.get(i);
    return result;
  }

  static std::string describe(const NumericsCase& c, DataType type, ReduceOp op) {
    return std::string(to_string(c.kind)) + " " + std::string(to_string(c.algorithm)) + " " +
           std::string(to_string(type)) + " " + std::string(to_string(op));
  }

  // Same value class: NaN matches any NaN, otherwise exact equality (signed
  // infinities included).
  static bool same(double expected, double actual) {
    if (std::isnan(expected)) return std::isnan(actual);
    return expected == actual;
  }

  Communicator comm = Communicator::world();
};

constexpr DataType kFloatTypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                    DataType::kFloat64};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kProd};

// Element i's special value on one rank (the last), 2 elsewhere: a NaN in
// any input gives NaN in every op; an infinity survives SUM, MEAN, PROD
// (with sign) and wins MAX (+inf) or MIN (-inf).
TEST_F(NumericsTest, NaNAndInfinitiesPerOp) {
  const int size = comm.size();
  const double specials[] = {kNaN, kInf, -kInf, 1.0};
  const std::size_t count = 4;
  int checked = 0;
  for (const NumericsCase& c : reducing_cases()) {
    for (DataType type : kFloatTypes) {
      for (ReduceOp op : kOps) {
        SCOPED_TRACE(describe(c, type, op));
        auto value = [&](int r, std::size_t i) { return r == size - 1 ? specials[i] : 2.0; };
        const std::vector<double> result = reduce(c, type, op, count, value);
        for (std::size_t i = 0; i < result.size(); ++i) {
          const double special = specials[i];
          const double others = size > 1 ? 2.0 : special;
          double expected = special;
          switch (op) {
            case ReduceOp::kSum: expected = special + 2.0 * (size - 1); break;
            case ReduceOp::kMean: expected = (special + 2.0 * (size - 1)) / size; break;
            case ReduceOp::kMin:
              expected = std::isnan(special) ? kNaN : std::min(special, others);
              break;
            case ReduceOp::kMax:
              expected = std::isnan(special) ? kNaN : std::max(special, others);
              break;
            case ReduceOp::kProd: expected = special * std::pow(2.0, size - 1); break;
            case ReduceOp::kBitwiseAnd:
            case ReduceOp::kBitwiseOr:
            case ReduceOp::kBitwiseXor: FAIL() << "kOps holds a bitwise op (floats only here)";
          }
          // Round the finite expectation like the type does (fp16/bf16).
          TypedBuffer rounded(type, 1);
          rounded.set(0, expected);
          expected = rounded.get(0);
          EXPECT_TRUE(same(expected, result[i]))
              << "rank " << comm.rank() << " index " << i << " (input " << special << "): expected "
              << expected << ", got " << result[i];
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// -0 and +0 compare equal, so MIN and MAX must pick by sign to agree on
// every rank whatever the operand order (recursive doubling combines in a
// different order on each side of an exchange): MIN gives -0, MAX +0 when
// both signs are present, the input's sign when only one is.
TEST_F(NumericsTest, SignedZerosGiveTheSameBitsOnEveryRank) {
  const int size = comm.size();
  // Element 0: -0 on even ranks, +0 on odd ones; element 1 the other way
  // round; element 2: -0 everywhere; element 3: +0 everywhere.
  auto value = [](int r, std::size_t i) {
    const bool negative = i == 2 || (i == 0 && r % 2 == 0) || (i == 1 && r % 2 == 1);
    return negative ? -0.0 : 0.0;
  };
  std::vector<NumericsCase> cases = reducing_cases();
  cases.push_back({Algorithm::kSharedMemory, CollectiveKind::kAllReduce});
  for (const NumericsCase& c : cases) {
    for (DataType type : kFloatTypes) {
      for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
        SCOPED_TRACE(describe(c, type, op));
        const std::vector<double> result = reduce(c, type, op, 4, value);
        for (std::size_t i = 0; i < result.size(); ++i) {
          bool any_negative = false;
          bool any_positive = false;
          for (int r = 0; r < size; ++r) {
            (std::signbit(value(r, i)) ? any_negative : any_positive) = true;
          }
          const bool expect_negative = op == ReduceOp::kMin ? any_negative : !any_positive;
          EXPECT_TRUE(result[i] == 0.0 && std::signbit(result[i]) == expect_negative)
              << "rank " << comm.rank() << " index " << i << ": expected "
              << (expect_negative ? "-0" : "+0") << ", got "
              << (std::signbit(result[i]) ? "-" : "+") << result[i];
        }
      }
    }
  }
}

// inf - inf is NaN: +inf on one rank and -inf on another.
TEST_F(NumericsTest, OppositeInfinitiesGiveNaNInSumAndMean) {
  const int size = comm.size();
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  for (const NumericsCase& c : reducing_cases()) {
    for (DataType type : kFloatTypes) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax}) {
        SCOPED_TRACE(describe(c, type, op));
        auto value = [&](int r, std::size_t) { return r == 0 ? kInf : (r == 1 ? -kInf : 1.0); };
        const auto result = reduce(c, type, op, 3, value);
        const double expected = op == ReduceOp::kMin ? -kInf : op == ReduceOp::kMax ? kInf : kNaN;
        for (double v : result) EXPECT_TRUE(same(expected, v)) << "got " << v;
      }
    }
  }
}

// float16 and bfloat16: each combination of two values is computed in
// float32 and rounded once to the 16-bit type, to nearest even. With two
// ranks there is one combination, so the result is exactly that rounding,
// whatever the algorithm; SUM overflows to infinity past the largest value.
TEST_F(NumericsTest, HalfPrecisionRoundsEachCombinationOnceToNearestEven) {
  if (comm.size() != 2) GTEST_SKIP() << "one combination needs exactly 2 ranks";
  struct Pair {
    DataType type;
    double a, b, expected;
  };
  const Pair pairs[] = {
      // float16: 11-bit significand; at 2048 the spacing is 2.
      {DataType::kFloat16, 2048, 1, 2048},       // tie, to even
      {DataType::kFloat16, 2050, 1, 2052},       // tie, to even (up)
      {DataType::kFloat16, 2048, 1.5, 2050},     // above the tie
      {DataType::kFloat16, 65504, 65504, kInf},  // overflow
      {DataType::kFloat16, 65504, 15, 65504},    // just below the overflow threshold
      {DataType::kFloat16, 65504, 16, kInf},     // 65520 is the tie: rounds to infinity
      // Smallest normal minus largest subnormal: the smallest subnormal.
      {DataType::kFloat16, std::ldexp(1.0, -14), -(std::ldexp(1.0, -14) - std::ldexp(1.0, -24)),
       std::ldexp(1.0, -24)},
      // bfloat16: 8-bit significand; at 256 the spacing is 2.
      {DataType::kBFloat16, 256, 1, 256},
      {DataType::kBFloat16, 258, 1, 260},
      {DataType::kBFloat16, 1, 0.00390625, 1},  // 1 + 2^-8: tie, to even
  };
  for (const NumericsCase& c : reducing_cases()) {
    for (const Pair& pair : pairs) {
      SCOPED_TRACE(describe(c, pair.type, ReduceOp::kSum) + " " + std::to_string(pair.a) + " + " +
                   std::to_string(pair.b));
      auto value = [&](int r, std::size_t) { return r == 0 ? pair.a : pair.b; };
      for (double v : reduce(c, pair.type, ReduceOp::kSum, 5, value)) {
        EXPECT_TRUE(same(pair.expected, v)) << "expected " << pair.expected << ", got " << v;
      }
    }
  }
}

// Exactly representable partial sums give exact results in 16-bit types at
// any rank count and order (no accumulation error to hide).
TEST_F(NumericsTest, HalfPrecisionExactWhenEveryPartialSumIsRepresentable) {
  const int size = comm.size();
  for (const NumericsCase& c : reducing_cases()) {
    for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
      SCOPED_TRACE(describe(c, type, ReduceOp::kSum));
      // Multiples of 1/8 up to 32: every partial sum up to 4 ranks is a
      // multiple of 1/8 below 128, exact in bfloat16 (8 bits) and float16.
      auto value = [&](int r, std::size_t i) {
        return static_cast<double>((r * 7 + i) % 32) / 8.0;
      };
      const std::size_t count = 97;
      const auto result = reduce(c, type, ReduceOp::kSum, count, value);
      for (std::size_t i = 0; i < result.size(); ++i) {
        double expected = 0;
        for (int r = 0; r < size; ++r) expected += value(r, i);
        ASSERT_EQ(result[i], expected) << "rank " << comm.rank() << " index " << i;
      }
    }
  }
}

// MEAN on integers: the SUM, wrapping around like SUM does, divided by the
// number of ranks with truncation toward zero.
TEST_F(NumericsTest, IntegerMeanTruncatesTheWrappedSumTowardZero) {
  const int size = comm.size();
  struct IntCase {
    DataType type;
    double rank0, others;
  };
  const IntCase cases[] = {
      {DataType::kInt32, -1, 0},   // -1 / p -> 0, not -1
      {DataType::kInt32, -7, -1},  // negative, inexact
      {DataType::kInt32, 7, 1},    {DataType::kInt64, -9000000000.0, 3},
      {DataType::kInt8, 100, 100},                                // the SUM wraps first
      {DataType::kInt8, -128, -1}, {DataType::kUInt8, 255, 200},  // unsigned wrap
  };
  for (const NumericsCase& c : reducing_cases()) {
    for (const IntCase& ic : cases) {
      SCOPED_TRACE(describe(c, ic.type, ReduceOp::kMean) + " rank0=" + std::to_string(ic.rank0));
      auto value = [&](int r, std::size_t) { return r == 0 ? ic.rank0 : ic.others; };
      const auto result = reduce(c, ic.type, ReduceOp::kMean, 7, value);
      // The wrapped sum in the type's width, then C++ division (truncation).
      long double sum = ic.rank0 + ic.others * (size - 1);
      std::int64_t wrapped = static_cast<std::int64_t>(sum);
      switch (ic.type) {
        case DataType::kInt8:
          wrapped = static_cast<std::int8_t>(static_cast<std::uint8_t>(wrapped));
          break;
        case DataType::kUInt8: wrapped = static_cast<std::uint8_t>(wrapped); break;
        case DataType::kInt32:
          wrapped = static_cast<std::int32_t>(static_cast<std::uint32_t>(wrapped));
          break;
        case DataType::kFloat16:
        case DataType::kBFloat16:
        case DataType::kFloat32:
        case DataType::kFloat64:
        case DataType::kInt64:
        default: break;
      }
      const double expected = static_cast<double>(wrapped / size);
      for (std::size_t i = 0; i < result.size(); ++i) {
        ASSERT_EQ(result[i], expected) << "rank " << comm.rank() << " index " << i;
      }
    }
  }
}

}  // namespace
}  // namespace collective
