// The reduction kernels against scalar reference arithmetic, for both
// instruction sets, every type and op, odd lengths and aliasing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "collective/in_tree/half_precision.h"
#include "kernels/float32_partials.h"
#include "kernels/reduce_kernels.h"

namespace collective::internal {
namespace {

TEST(HalfPrecisionTest, KnownFloat16Values) {
  EXPECT_EQ(float_to_float16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_float16(-2.0f), 0xC000);
  EXPECT_EQ(float_to_float16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_float16(65520.0f), 0x7C00);                // rounds to infinity
  EXPECT_EQ(float_to_float16(5.9604644775390625e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_float16(2.98e-8f), 0x0000);                // below half of it: zero
  EXPECT_EQ(float_to_float16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(float_to_float16(std::nanf("")) & 0x7C00, 0x7C00);
  EXPECT_NE(float_to_float16(std::nanf("")) & 0x03FF, 0);
  // Ties round to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(float_to_float16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(float_to_float16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
}

TEST(HalfPrecisionTest, Float16RoundTripsEveryPattern) {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const float f = float16_to_float(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_float16(f), h) << "pattern " << bits;
  }
}

TEST(HalfPrecisionTest, BFloat16RoundingAndRoundTrip) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie to even
  EXPECT_EQ(float_to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie to even
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto b = static_cast<std::uint16_t>(bits);
    const float f = bfloat16_to_float(b);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bfloat16(f), b) << "pattern " << bits;
  }
}

// Reference: one element at a time in double (exact for the inputs used).
double reference(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean: return a + b;
    case ReduceOp::kProd: return a * b;
    case ReduceOp::kMin: return std::min(a, b);
    case ReduceOp::kMax: return std::max(a, b);
    case ReduceOp::kBitwiseAnd:
    case ReduceOp::kBitwiseOr:
    case ReduceOp::kBitwiseXor: break;  // integers only: BitwiseOpsOnEveryIntegerType
  }
  ADD_FAILURE() << "no double reference for " << to_string(op);
  return 0;
}

template <typename T>
void check_native_type(KernelIsa isa, DataType type) {
  std::mt19937 generator(7);
  std::uniform_int_distribution<int> small(-9, 9);
  for (std::size_t count : {1u, 3u, 15u, 16u, 17u, 31u, 64u, 1001u}) {
    for (ReduceOp op :
         {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProd}) {
      std::vector<T> a(count), b(count), out(count);
      for (std::size_t i = 0; i < count; ++i) {
        // Unsigned inputs in 0..15 keep products within uint8.
        a[i] = static_cast<T>(std::is_signed_v<T> ? small(generator) : (small(generator) + 9) % 16);
        b[i] = static_cast<T>(std::is_signed_v<T> ? small(generator) : (small(generator) + 9) % 16);
      }
      for (int divisor : {1, 3}) {
        reduce_buffers_with(isa, out.data(), a.data(), b.data(), count, type, op, divisor);
        for (std::size_t i = 0; i < count; ++i) {
          double want = reference(op, static_cast<double>(a[i]), static_cast<double>(b[i]));
          if (op == ReduceOp::kMean && divisor > 1) {
            want = std::is_floating_point_v<T>
                       ? static_cast<double>(static_cast<T>(want) / static_cast<T>(divisor))
                       : std::trunc(want / divisor);
          }
          ASSERT_EQ(static_cast<double>(out[i]), want)
              << to_string(isa) << " " << to_string(type) << " " << to_string(op) << " count "
              << count << " index " << i << " divisor " << divisor;
        }
      }
      // In place: dst aliases a.
      std::vector<T> in_place = a;
      reduce_buffers_with(isa, in_place.data(), in_place.data(), b.data(), count, type, op, 1);
      for (std::size_t i = 0; i < count; ++i) {
        ASSERT_EQ(static_cast<double>(in_place[i]),
                  reference(op, static_cast<double>(a[i]), static_cast<double>(b[i])));
      }
    }
  }
}

// The bitwise ops on full-width random bits, against the operators.
template <typename T>
void check_bitwise_type(KernelIsa isa, DataType type) {
  std::mt19937_64 generator(11);
  for (std::size_t count : {1u, 7u, 32u, 33u, 1001u}) {
    std::vector<T> a(count), b(count), out(count);
    for (std::size_t i = 0; i < count; ++i) {
      a[i] = static_cast<T>(generator());
      b[i] = static_cast<T>(generator());
    }
    for (ReduceOp op : {ReduceOp::kBitwiseAnd, ReduceOp::kBitwiseOr, ReduceOp::kBitwiseXor}) {
      reduce_buffers_with(isa, out.data(), a.data(), b.data(), count, type, op, 1);
      std::vector<T> in_place = b;
      reduce_buffers_with(isa, in_place.data(), a.data(), in_place.data(), count, type, op, 1);
      for (std::size_t i = 0; i < count; ++i) {
        const T want = static_cast<T>(op == ReduceOp::kBitwiseAnd  ? a[i] & b[i]
                                      : op == ReduceOp::kBitwiseOr ? a[i] | b[i]
                                                                   : a[i] ^ b[i]);
        ASSERT_EQ(out[i], want) << to_string(isa) << " " << to_string(type) << " " << to_string(op)
                                << " count " << count << " index " << i;
        ASSERT_EQ(in_place[i], want) << "in place, " << to_string(type) << " " << to_string(op);
      }
    }
  }
}

class KernelIsaTest : public ::testing::TestWithParam<KernelIsa> {
 protected:
  void SetUp() override {
    if (!kernel_isa_available(GetParam())) GTEST_SKIP() << "CPU lacks " << to_string(GetParam());
  }
};

TEST_P(KernelIsaTest, NativeTypes) {
  check_native_type<float>(GetParam(), DataType::kFloat32);
  check_native_type<double>(GetParam(), DataType::kFloat64);
  check_native_type<std::int8_t>(GetParam(), DataType::kInt8);
  check_native_type<std::uint8_t>(GetParam(), DataType::kUInt8);
  check_native_type<std::int32_t>(GetParam(), DataType::kInt32);
  check_native_type<std::int64_t>(GetParam(), DataType::kInt64);
}

TEST_P(KernelIsaTest, BitwiseOpsOnEveryIntegerType) {
  check_bitwise_type<std::int8_t>(GetParam(), DataType::kInt8);
  check_bitwise_type<std::uint8_t>(GetParam(), DataType::kUInt8);
  check_bitwise_type<std::int32_t>(GetParam(), DataType::kInt32);
  check_bitwise_type<std::int64_t>(GetParam(), DataType::kInt64);
}

TEST_P(KernelIsaTest, IntegerSumAndProductWrapAround) {
  std::int8_t a = 100, b = 100, out = 0;
  reduce_buffers_with(GetParam(), &out, &a, &b, 1, DataType::kInt8, ReduceOp::kSum, 1);
  EXPECT_EQ(out, static_cast<std::int8_t>(-56));
  std::int32_t x = std::numeric_limits<std::int32_t>::max(), y = 2, z = 0;
  reduce_buffers_with(GetParam(), &z, &x, &y, 1, DataType::kInt32, ReduceOp::kSum, 1);
  EXPECT_EQ(z, std::numeric_limits<std::int32_t>::min() + 1);
  reduce_buffers_with(GetParam(), &z, &x, &y, 1, DataType::kInt32, ReduceOp::kProd, 1);
  EXPECT_EQ(z, -2);
  // MEAN of integers truncates toward zero: (-7 + 0) / 2 = -3.
  std::int32_t m = -7, n = 0, mean = 0;
  reduce_buffers_with(GetParam(), &mean, &m, &n, 1, DataType::kInt32, ReduceOp::kMean, 2);
  EXPECT_EQ(mean, -3);
}

TEST_P(KernelIsaTest, SixteenBitTypesAccumulateInFloat32) {
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
    auto to_bits = [&](float v) {
      return type == DataType::kFloat16 ? float_to_float16(v) : float_to_bfloat16(v);
    };
    auto to_float = [&](std::uint16_t v) {
      return type == DataType::kFloat16 ? float16_to_float(v) : bfloat16_to_float(v);
    };
    for (std::size_t count : {1u, 7u, 16u, 33u, 1000u}) {
      for (ReduceOp op :
           {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProd}) {
        std::vector<std::uint16_t> a(count), b(count), out(count);
        for (std::size_t i = 0; i < count; ++i) {
          a[i] = to_bits(0.1f * static_cast<float>(i % 37) - 1.3f);
          b[i] = to_bits(0.37f * static_cast<float>(i % 11) + 0.01f);
        }
        reduce_buffers_with(GetParam(), out.data(), a.data(), b.data(), count, type, op, 3);
        for (std::size_t i = 0; i < count; ++i) {
          // One float32 operation on the decoded inputs, one rounding.
          float want = static_cast<float>(reference(op, to_float(a[i]), to_float(b[i])));
          if (op == ReduceOp::kMean) want = (to_float(a[i]) + to_float(b[i])) / 3.0f;
          ASSERT_EQ(out[i], to_bits(want))
              << to_string(type) << " " << to_string(op) << " index " << i;
        }
      }
    }
  }
}

// The float32-partial kernel (kernels/float32_partials.h): every form of
// operand and result against one float32 operation on the decoded inputs,
// rounded once only when the result is 16-bit (after MEAN's division),
// including values whose 16-bit sum or product would overflow.
TEST_P(KernelIsaTest, Float32PartialsRoundOnlyTheResult) {
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
    auto to_bits = [&](float v) {
      return type == DataType::kFloat16 ? float_to_float16(v) : float_to_bfloat16(v);
    };
    auto to_float = [&](std::uint16_t v) {
      return type == DataType::kFloat16 ? float16_to_float(v) : bfloat16_to_float(v);
    };
    for (std::size_t count : {1u, 15u, 16u, 33u, 1000u}) {
      std::vector<std::uint16_t> a(count), b16(count), out16(count);
      std::vector<float> b32(count), out32(count);
      for (std::size_t i = 0; i < count; ++i) {
        a[i] = to_bits(i % 3 == 0 ? 40000.0f : 0.1f * static_cast<float>(i % 37) - 1.3f);
        b16[i] = to_bits(i % 5 == 0 ? 60000.0f : 0.37f * static_cast<float>(i % 11) + 0.01f);
        b32[i] = i % 4 == 0 ? 123456.7f : 0.013f * static_cast<float>(i % 29) - 0.2f;
      }
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kProd}) {
        for (bool b_wide : {false, true}) {
          auto operand = [&](std::size_t i) { return b_wide ? b32[i] : to_float(b16[i]); };
          const void* b = b_wide ? static_cast<const void*>(b32.data()) : b16.data();
          auto exact = [&](std::size_t i) {
            return op == ReduceOp::kProd ? to_float(a[i]) * operand(i)
                                         : to_float(a[i]) + operand(i);
          };
          reduce_into_partial_with(GetParam(), out32.data(), true, a.data(), b, b_wide, count, type,
                                   op, 3);
          reduce_into_partial_with(GetParam(), out16.data(), false, a.data(), b, b_wide, count,
                                   type, op, 3);
          for (std::size_t i = 0; i < count; ++i) {
            const std::string what =
                std::string(to_string(type)) + " " + std::string(to_string(op)) +
                (b_wide ? " float32 b" : " 16-bit b") + " index " + std::to_string(i);
            ASSERT_EQ(out32[i], exact(i)) << what << " (partial: neither divided nor rounded)";
            const float result = op == ReduceOp::kMean ? exact(i) / 3.0f : exact(i);
            ASSERT_EQ(out16[i], to_bits(result)) << what;
          }
        }
      }
    }
  }
}

TEST_P(KernelIsaTest, NanPropagatesThroughMinAndMax) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {nan, 1.0f, 2.0f}, b = {0.0f, nan, 1.0f}, out(3);
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
    reduce_buffers_with(GetParam(), out.data(), a.data(), b.data(), 3, DataType::kFloat32, op, 1);
    EXPECT_TRUE(std::isnan(out[0]));
    EXPECT_TRUE(std::isnan(out[1]));
    EXPECT_EQ(out[2], op == ReduceOp::kMin ? 1.0f : 2.0f);
    // Order of operands does not change the bits.
    std::vector<float> swapped(3);
    reduce_buffers_with(GetParam(), swapped.data(), b.data(), a.data(), 3, DataType::kFloat32, op,
                        1);
    EXPECT_EQ(std::memcmp(out.data(), swapped.data(), sizeof(float) * 3), 0);
  }
}

TEST(KernelsTest, IsasAgreeBitwiseOnRandomFloats) {
  if (!kernel_isa_available(KernelIsa::kAvx2)) GTEST_SKIP() << "CPU lacks AVX2";
  std::mt19937 generator(11);
  std::uniform_real_distribution<float> values(-4.0f, 4.0f);
  const std::size_t count = 4099;
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
    std::vector<std::uint16_t> a(count), b(count), generic(count), avx2(count);
    for (std::size_t i = 0; i < count; ++i) {
      a[i] = type == DataType::kFloat16 ? float_to_float16(values(generator))
                                        : float_to_bfloat16(values(generator));
      b[i] = type == DataType::kFloat16 ? float_to_float16(values(generator))
                                        : float_to_bfloat16(values(generator));
    }
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kProd, ReduceOp::kMax}) {
      reduce_buffers_with(KernelIsa::kGeneric, generic.data(), a.data(), b.data(), count, type, op,
                          4);
      reduce_buffers_with(KernelIsa::kAvx2, avx2.data(), a.data(), b.data(), count, type, op, 4);
      ASSERT_EQ(generic, avx2) << to_string(type) << " " << to_string(op);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, KernelIsaTest,
                         ::testing::Values(KernelIsa::kGeneric, KernelIsa::kAvx2),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace collective::internal
