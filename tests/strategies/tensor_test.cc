// Tensor: construction, typed views, conversions (float16/bfloat16 round to
// nearest even, exhaustively checked), reshape, and the errors.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "collective/in_tree/half_precision.h"
#include "values/element_math.h"
#include "ps/ps_wire.h"
#include "strategies_test_util.h"

namespace collective::distribute {
namespace {

using testing::tensor_equals;
using testing::throws_with;

TEST(Tensor, DefaultIsFloat32ScalarZero) {
  const Tensor t;
  EXPECT_EQ(t.dtype(), DataType::kFloat32);
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.num_elements(), 1u);
  EXPECT_EQ(t.values<float>()[0], 0.0f);
}

TEST(Tensor, ZeroFilledOfEveryType) {
  for (int type = 0; type < kNumDataTypes; ++type) {
    const auto dtype = static_cast<DataType>(type);
    const Tensor t(dtype, {2, 3});
    EXPECT_EQ(t.num_elements(), 6u);
    EXPECT_EQ(t.num_bytes(), 6 * element_size(dtype));
    EXPECT_TRUE(tensor_equals(t, dtype, {2, 3}, std::vector<double>(6, 0.0),
                              std::string(to_string(dtype))));
  }
}

// Sizes are computed with overflow checks: a shape whose element count or
// byte size cannot exist is refused, naming it, instead of wrapping to a
// 0-byte tensor that the first write overruns.
TEST(Tensor, ImpossibleSizesAreRefusedNamingTheShape) {
  struct Case {
    DataType dtype;
    Shape shape;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {DataType::kFloat32,
       {std::int64_t{1} << 62},
       "float32 shape [4611686018427387904] has 4611686018427387904 elements"},
      {DataType::kFloat32,
       {std::int64_t{1} << 40, std::int64_t{1} << 40},
       "shape [1099511627776, 1099511627776] has more elements than an int64"},
      {DataType::kInt8,
       {std::int64_t{1} << 62, 4},
       "shape [4611686018427387904, 4] has more elements"},
      {DataType::kFloat64, {std::int64_t{1} << 60}, "float64 shape [1152921504606846976]"},
      {DataType::kFloat16, {3, std::int64_t{1} << 61, 7}, "shape [3, 2305843009213693952, 7]"},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { Tensor t(c.dtype, c.shape); }, c.needle))
        << to_string(c.dtype) << " " << shape_string(c.shape);
  }
  // Zero elements stay valid whatever the other dimensions are.
  const Tensor empty(DataType::kFloat32, {0, std::int64_t{1} << 62, std::int64_t{1} << 62});
  EXPECT_EQ(empty.num_elements(), 0u);
  EXPECT_EQ(empty.num_bytes(), 0u);
  // A reshape whose element count wraps to the tensor's own is refused.
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] {
        (void)Tensor(DataType::kFloat32, {0}).reshape({std::int64_t{1} << 62, 4});
      },
      "shape [4611686018427387904, 4] has more elements"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] {
        (void)Tensor(std::vector<float>{1, 2, 3, 4}, {4}).reshape({std::int64_t{1} << 62, 4, 1});
      },
      "has more elements"));
  // Concatenating empty parts whose lengths add past 2^63 - 1.
  const Tensor part(DataType::kFloat32, {std::int64_t{1} << 62, 0});
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [&] {
        (void)detail::concat({part, part}, 0);
      },
      "add up to more than 2^63 - 1"));
  // Batching elements of an impossible batched shape cannot happen: the
  // elements would have to exist. Stacking empty ones keeps every dimension.
  const Element stacked = stack_elements({Element{part}, Element{part}});
  EXPECT_EQ(stacked[0].shape(), (Shape{2, std::int64_t{1} << 62, 0}));
}

// A tensor read from a parameter-server message is sized with the same
// checks, and against the message, before anything is allocated.
TEST(Tensor, WireTensorsOfImpossibleOrMissingSizeAreRefused) {
  const auto message = [](Shape shape, std::uint64_t claimed_bytes) {
    detail::Writer writer;
    writer.u32(static_cast<std::uint32_t>(DataType::kFloat32));
    writer.u32(static_cast<std::uint32_t>(shape.size()));
    for (std::int64_t d : shape) writer.i64(d);
    writer.u64(claimed_bytes);
    return writer.take();
  };
  const std::vector<std::pair<detail::Bytes, std::string>> cases = {
      {message({std::int64_t{1} << 62}, 0), "float32 shape [4611686018427387904] has"},
      {message({std::int64_t{1} << 40, std::int64_t{1} << 40}, 0),
       "has more elements than an int64"},
      {message({std::int64_t{1} << 40}, std::uint64_t{4} << 40),
       "carries 4398046511104 bytes, 0 in the message"},
  };
  for (const auto& [bytes, needle] : cases) {
    EXPECT_TRUE(throws_with<InvalidArgumentError>(
        [&] { (void)detail::Reader(bytes, "test message").tensor(); }, needle));
  }
  detail::Writer good;
  good.tensor(Tensor(std::vector<float>{1, 2, 3}, {3}));
  const Tensor back = detail::Reader(good.take(), "test message").tensor();
  EXPECT_TRUE(tensor_equals(back, DataType::kFloat32, {3}, {1, 2, 3}));
}

TEST(Tensor, ZeroSizedDimensions) {
  const Tensor t(DataType::kInt32, {0, 5});
  EXPECT_EQ(t.num_elements(), 0u);
  EXPECT_EQ(t.num_bytes(), 0u);
  EXPECT_EQ(t.dim(1), 5);
}

TEST(Tensor, FromValuesAndViews) {
  Tensor t(std::vector<std::int64_t>{1, -2, 3}, Shape{3});
  EXPECT_EQ(t.dtype(), DataType::kInt64);
  t.values<std::int64_t>()[1] = 7;
  EXPECT_TRUE(tensor_equals(t, DataType::kInt64, {3}, {1, 7, 3}));
  EXPECT_TRUE(
      throws_with<InvalidArgumentError>([&] { (void)t.values<float>(); }, "viewed as float32"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] {
        Tensor(std::vector<float>{1, 2, 3}, Shape{2, 2});
      },
      "3 values given for shape [2, 2]"));
  EXPECT_TRUE(throws_with<InvalidArgumentError>(
      [] {
        Tensor(DataType::kFloat32, {2, -1});
      },
      "negative dimension"));
}

TEST(Tensor, FromDoublesEveryType) {
  const std::vector<double> values{-3, -1.5, 0, 2.25, 100};
  EXPECT_TRUE(tensor_equals(Tensor::from_doubles(DataType::kFloat16, values, {5}),
                            DataType::kFloat16, {5}, values));
  EXPECT_TRUE(tensor_equals(Tensor::from_doubles(DataType::kBFloat16, values, {5}),
                            DataType::kBFloat16, {5}, values));
  EXPECT_TRUE(tensor_equals(Tensor::from_doubles(DataType::kFloat64, values, {5}),
                            DataType::kFloat64, {5}, values));
  // Integer types truncate toward zero.
  EXPECT_TRUE(tensor_equals(Tensor::from_doubles(DataType::kInt8, values, {5}), DataType::kInt8,
                            {5}, {-3, -1, 0, 2, 100}));
  EXPECT_TRUE(tensor_equals(Tensor::from_doubles(DataType::kInt32, values, {5}), DataType::kInt32,
                            {5}, {-3, -1, 0, 2, 100}));
}

TEST(Tensor, ReshapeKeepsBytes) {
  const Tensor t(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const Tensor r = t.reshape({3, 2});
  EXPECT_TRUE(tensor_equals(r, DataType::kFloat32, {3, 2}, {1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { (void)t.reshape({4}); }, "cannot reshape"));
  EXPECT_TRUE(t.identical(t.reshape({2, 3})));
  EXPECT_FALSE(t.identical(r));
}

TEST(Tensor, DimChecksAxis) {
  const Tensor t(DataType::kFloat32, {2, 3});
  EXPECT_TRUE(throws_with<InvalidArgumentError>([&] { (void)t.dim(2); }, "axis 2 is out of range"));
}

// Every float16 pattern converts to float and back unchanged (NaNs stay NaN).
TEST(HalfConversion, RoundTripsEveryPattern) {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const float f = ::collective::float16_to_float(h);
    const std::uint16_t back = ::collective::float_to_float16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(::collective::float16_to_float(back))) << "pattern " << bits;
    } else {
      ASSERT_EQ(back, h) << "pattern " << bits << " value " << f;
    }
  }
}

// Values halfway between two float16 neighbours round to the even one;
// values just off the midpoint round to the nearer one.
TEST(HalfConversion, RoundsToNearestEven) {
  for (std::uint32_t bits = 0; bits < 0x7BFF; ++bits) {  // positive finite, excluding the largest
    const float low = ::collective::float16_to_float(static_cast<std::uint16_t>(bits));
    const float high = ::collective::float16_to_float(static_cast<std::uint16_t>(bits + 1));
    const double mid = (static_cast<double>(low) + high) / 2;
    const auto mid_f = static_cast<float>(mid);  // exact: halves have 11 bits
    const std::uint16_t even =
        (bits % 2 == 0) ? static_cast<std::uint16_t>(bits) : static_cast<std::uint16_t>(bits + 1);
    ASSERT_EQ(::collective::float_to_float16(mid_f), even) << "midpoint after pattern " << bits;
    ASSERT_EQ(::collective::float_to_float16(std::nextafter(mid_f, 0.0f)), bits)
        << "below midpoint " << bits;
    ASSERT_EQ(::collective::float_to_float16(std::nextafter(mid_f, 1e9f)), bits + 1)
        << "above midpoint " << bits;
  }
  EXPECT_EQ(::collective::float_to_float16(65519.0f), 0x7BFF);  // largest finite
  EXPECT_EQ(::collective::float_to_float16(65520.0f), 0x7C00);  // rounds to infinity
  EXPECT_EQ(::collective::float_to_float16(-1e10f), 0xFC00);
}

TEST(BFloat16Conversion, RoundTripsAndRoundsToNearestEven) {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto b = static_cast<std::uint16_t>(bits);
    const float f = ::collective::bfloat16_to_float(b);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(::collective::bfloat16_to_float(::collective::float_to_bfloat16(f))));
      continue;
    }
    ASSERT_EQ(::collective::float_to_bfloat16(f), b) << "pattern " << bits;
  }
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(::collective::float_to_bfloat16(1.0f + 0x1.0p-8f), 0x3F80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
  EXPECT_EQ(::collective::float_to_bfloat16(1.0f + 3 * 0x1.0p-8f), 0x3F82);
}

// Blocks of 64 KiB and more are reused through the tensor block cache: a
// reused block must still give zero-filled tensors, aligned data, and copies
// and moves that own their bytes.
TEST(TensorStorage, ReusedBlocksStillZeroFillAndCopiesOwnTheirBytes) {
  constexpr std::size_t kCount = 300000;  // 1.2 MB: cached
  const void* first_block = nullptr;
  {
    Tensor dirty(DataType::kFloat32, {static_cast<std::int64_t>(kCount)});
    for (float& v : dirty.values<float>()) v = -7.0f;
    first_block = dirty.raw_data();
  }
  const Tensor zeros(DataType::kFloat32, {static_cast<std::int64_t>(kCount)});
  // The same block came back (nothing else freed one this size meanwhile).
  EXPECT_EQ(zeros.raw_data(), first_block);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(zeros.raw_data()) % 64, 0u);
  const auto values = zeros.values<float>();
  for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(values[i], 0.0f) << "index " << i;

  std::vector<float> pattern(kCount);
  for (std::size_t i = 0; i < kCount; ++i) pattern[i] = static_cast<float>(i % 1000);
  Tensor original(pattern, {static_cast<std::int64_t>(kCount)});
  Tensor copy = original;
  EXPECT_NE(copy.raw_data(), original.raw_data());
  EXPECT_TRUE(copy.identical(original));
  copy.values<float>()[5] = -1.0f;
  EXPECT_EQ(original.values<float>()[5], 5.0f);
  EXPECT_FALSE(copy.identical(original));
  Tensor moved = std::move(copy);
  EXPECT_EQ(moved.values<float>()[5], -1.0f);
  copy = original;  // assignment into a moved-from tensor
  EXPECT_TRUE(copy.identical(original));
  // Sizes a quarter apart do not share a block; a reused larger block keeps
  // the requested size.
  const Tensor small(DataType::kFloat32, {static_cast<std::int64_t>(kCount * 3 / 4)});
  EXPECT_EQ(small.num_bytes(), kCount * 3 / 4 * sizeof(float));
  for (float v : small.values<float>()) ASSERT_EQ(v, 0.0f);
  // Empty and small tensors.
  const Tensor empty(DataType::kFloat64, {0});
  EXPECT_EQ(empty.num_bytes(), 0u);
  EXPECT_TRUE(Tensor(empty).identical(empty));
  const Tensor scalar = Tensor::scalar(3.5);
  EXPECT_EQ(Tensor(scalar).values<double>()[0], 3.5);
}

}  // namespace
}  // namespace collective::distribute
