// The reduction loops, written once and compiled twice: in
// reduce_kernels_generic.cc for any x86-64 (or other) processor and in
// reduce_kernels_avx2.cc with -mavx2 -mf16c -mfma. Include only from those
// two files, after defining COLLECTIVE_KERNEL_NAMESPACE (and, for the AVX2
// build, COLLECTIVE_KERNEL_F16C).
#pragma once

#include <cstddef>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "collective/types.h"
#include "collective/in_tree/half_precision.h"

#ifdef COLLECTIVE_KERNEL_F16C
#include <immintrin.h>
#endif

namespace collective::internal::COLLECTIVE_KERNEL_NAMESPACE {

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;

// Integer SUM and PROD wrap around (two's complement), computed in the
// unsigned type so that overflow is defined.
template <typename T>
struct Sum {
  static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      return a + b;
    } else {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    }
  }
};

template <typename T>
struct Prod {
  static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      return a * b;
    } else {
      using U = std::make_unsigned_t<T>;
      using Wide = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
      return static_cast<T>(static_cast<U>(static_cast<Wide>(static_cast<U>(a)) *
                                           static_cast<Wide>(static_cast<U>(b))));
    }
  }
};

// MIN and MAX give the same bits whatever the order of the operands, so
// every rank and every algorithm agree bit for bit: a quiet NaN when either
// input is NaN, and of -0 and +0 (which compare equal) MIN gives -0 and MAX
// +0, as IEEE 754-2019's minimum and maximum do.
template <typename T>
using FloatBits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;

template <typename T>
struct Min {
  static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
      // Equal values have equal bits but for the sign of a zero: OR keeps -0.
      if (a == b) {
        return std::bit_cast<T>(std::bit_cast<FloatBits<T>>(a) | std::bit_cast<FloatBits<T>>(b));
      }
    }
    return b < a ? b : a;
  }
};

template <typename T>
struct Max {
  static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
      // AND keeps +0.
      if (a == b) {
        return std::bit_cast<T>(std::bit_cast<FloatBits<T>>(a) & std::bit_cast<FloatBits<T>>(b));
      }
    }
    return a < b ? b : a;
  }
};

// The bitwise ops, on integer types only (argument checks refuse the
// floating ones before a kernel runs).
template <typename T>
struct BitwiseAnd {
  static T apply(T a, T b) { return static_cast<T>(a & b); }
};
template <typename T>
struct BitwiseOr {
  static T apply(T a, T b) { return static_cast<T>(a | b); }
};
template <typename T>
struct BitwiseXor {
  static T apply(T a, T b) { return static_cast<T>(a ^ b); }
};

[[noreturn]] inline void bitwise_on_floating() {
  throw std::logic_error("reduction kernel: a bitwise op on a floating type passed the checks");
}

// Division for MEAN: floating types divide, integers truncate toward zero.
template <typename T>
inline T divide(T value, int divisor) {
  if constexpr (kIsFloat<T>) {
    return value / static_cast<T>(divisor);
  } else {
    return static_cast<T>(static_cast<std::int64_t>(value) / divisor);
  }
}

template <template <typename> class Op, typename T>
void combine(T* dst, const T* a, const T* b, std::size_t count, int divisor) {
  if (divisor > 1) {
    for (std::size_t i = 0; i < count; ++i) dst[i] = divide<T>(Op<T>::apply(a[i], b[i]), divisor);
  } else {
    for (std::size_t i = 0; i < count; ++i) dst[i] = Op<T>::apply(a[i], b[i]);
  }
}

// float16 goes through float32 in blocks of kBlock lanes: the
// conversion of a block is vectorized (F16C for float16 where available),
// and so is the arithmetic on the float block.
constexpr std::size_t kBlock = 16;

struct Float16Codec {
  static float load(std::uint16_t bits) { return float16_to_float(bits); }
  static std::uint16_t store(float value) { return float_to_float16(value); }
  static void load_block(const std::uint16_t* in, float* out) {
#ifdef COLLECTIVE_KERNEL_F16C
    for (std::size_t i = 0; i < kBlock; i += 8) {
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(packed));
    }
#else
    for (std::size_t i = 0; i < kBlock; ++i) out[i] = load(in[i]);
#endif
  }
  static void store_block(const float* in, std::uint16_t* out) {
#ifdef COLLECTIVE_KERNEL_F16C
    for (std::size_t i = 0; i < kBlock; i += 8) {
      const __m128i packed =
          _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), packed);
    }
#else
    for (std::size_t i = 0; i < kBlock; ++i) out[i] = store(in[i]);
#endif
  }
};

template <template <typename> class Op, typename Codec>
void combine16(std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b,
               std::size_t count, int divisor) {
  const float scale = divisor > 1 ? static_cast<float>(divisor) : 1.0f;
  std::size_t i = 0;
  alignas(32) float x[kBlock];
  alignas(32) float y[kBlock];
  for (; i + kBlock <= count; i += kBlock) {
    Codec::load_block(a + i, x);
    Codec::load_block(b + i, y);
    for (std::size_t k = 0; k < kBlock; ++k) x[k] = Op<float>::apply(x[k], y[k]);
    if (divisor > 1) {
      for (std::size_t k = 0; k < kBlock; ++k) x[k] /= scale;
    }
    Codec::store_block(x, dst + i);
  }
  for (; i < count; ++i) {
    float value = Op<float>::apply(Codec::load(a[i]), Codec::load(b[i]));
    if (divisor > 1) value /= scale;
    dst[i] = Codec::store(value);
  }
}

// bfloat16 is the top half of a float32, so one flat loop (decode, combine,
// round to nearest even, keep NaNs quiet) vectorizes well without blocks.
template <template <typename> class Op>
void combine_bfloat16(std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b,
                      std::size_t count, int divisor) {
  const float scale = divisor > 1 ? static_cast<float>(divisor) : 1.0f;
  for (std::size_t i = 0; i < count; ++i) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(a[i]) << 16);
    const float y = std::bit_cast<float>(static_cast<std::uint32_t>(b[i]) << 16);
    float value = Op<float>::apply(x, y);
    if (divisor > 1) value /= scale;
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    const std::uint32_t quiet_nan = (bits >> 16) | 0x40u;
    dst[i] = static_cast<std::uint16_t>((bits & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
  }
}

template <typename T>
void dispatch_op(void* dst, const void* a, const void* b, std::size_t count, ReduceOp op,
                 int divisor) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  switch (op) {
    case ReduceOp::kSum: return combine<Sum, T>(d, x, y, count, 1);
    case ReduceOp::kMean: return combine<Sum, T>(d, x, y, count, divisor);
    case ReduceOp::kMin: return combine<Min, T>(d, x, y, count, 1);
    case ReduceOp::kMax: return combine<Max, T>(d, x, y, count, 1);
    case ReduceOp::kProd: return combine<Prod, T>(d, x, y, count, 1);
    case ReduceOp::kBitwiseAnd:
    case ReduceOp::kBitwiseOr:
    case ReduceOp::kBitwiseXor:
      if constexpr (kIsFloat<T>) {
        bitwise_on_floating();
      } else {
        if (op == ReduceOp::kBitwiseAnd) return combine<BitwiseAnd, T>(d, x, y, count, 1);
        if (op == ReduceOp::kBitwiseOr) return combine<BitwiseOr, T>(d, x, y, count, 1);
        return combine<BitwiseXor, T>(d, x, y, count, 1);
      }
  }
}

template <typename Codec>
void dispatch_op16(void* dst, const void* a, const void* b, std::size_t count, ReduceOp op,
                   int divisor) {
  auto* d = static_cast<std::uint16_t*>(dst);
  const auto* x = static_cast<const std::uint16_t*>(a);
  const auto* y = static_cast<const std::uint16_t*>(b);
  switch (op) {
    case ReduceOp::kSum: return combine16<Sum, Codec>(d, x, y, count, 1);
    case ReduceOp::kMean: return combine16<Sum, Codec>(d, x, y, count, divisor);
    case ReduceOp::kMin: return combine16<Min, Codec>(d, x, y, count, 1);
    case ReduceOp::kMax: return combine16<Max, Codec>(d, x, y, count, 1);
    case ReduceOp::kProd: return combine16<Prod, Codec>(d, x, y, count, 1);
    case ReduceOp::kBitwiseAnd:
    case ReduceOp::kBitwiseOr:
    case ReduceOp::kBitwiseXor: bitwise_on_floating();
  }
}

inline void dispatch_bfloat16(void* dst, const void* a, const void* b, std::size_t count,
                              ReduceOp op, int divisor) {
  auto* d = static_cast<std::uint16_t*>(dst);
  const auto* x = static_cast<const std::uint16_t*>(a);
  const auto* y = static_cast<const std::uint16_t*>(b);
  switch (op) {
    case ReduceOp::kSum: return combine_bfloat16<Sum>(d, x, y, count, 1);
    case ReduceOp::kMean: return combine_bfloat16<Sum>(d, x, y, count, divisor);
    case ReduceOp::kMin: return combine_bfloat16<Min>(d, x, y, count, 1);
    case ReduceOp::kMax: return combine_bfloat16<Max>(d, x, y, count, 1);
    case ReduceOp::kProd: return combine_bfloat16<Prod>(d, x, y, count, 1);
    case ReduceOp::kBitwiseAnd:
    case ReduceOp::kBitwiseOr:
    case ReduceOp::kBitwiseXor: bitwise_on_floating();
  }
}

// ---- 16-bit floats with float32 partials (kernels/float32_partials.h) ----

// bfloat16 through float32 in the same blocks as float16 (the conversions
// are shifts, and the rounding the one of combine_bfloat16).
struct BFloat16Codec {
  static float load(std::uint16_t bits) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
  }
  static std::uint16_t store(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    const std::uint32_t quiet_nan = (bits >> 16) | 0x40u;
    return static_cast<std::uint16_t>((bits & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
  }
  static void load_block(const std::uint16_t* in, float* out) {
    for (std::size_t i = 0; i < kBlock; ++i) out[i] = load(in[i]);
  }
  static void store_block(const float* in, std::uint16_t* out) {
    for (std::size_t i = 0; i < kBlock; ++i) out[i] = store(in[i]);
  }
};

// dst = a op b with a in the 16-bit type, b in it or in float32 (kBWide),
// dst a float32 partial (kDstWide, not rounded) or the 16-bit result,
// divided by divisor (> 1) before its one rounding. dst may be a or b
// exactly: each block is read before it is written. The widths are
// template parameters so that each form is a branch-free loop.
template <template <typename> class Op, typename Codec, bool kBWide, bool kDstWide>
void combine_widening(void* dst, const std::uint16_t* a, const void* b, std::size_t count,
                      int divisor) {
  const float scale = static_cast<float>(divisor);
  alignas(32) float x[kBlock];
  alignas(32) float y[kBlock];
  std::size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    Codec::load_block(a + i, x);
    if constexpr (kBWide) {
      const float* wide = static_cast<const float*>(b) + i;
      for (std::size_t k = 0; k < kBlock; ++k) x[k] = Op<float>::apply(x[k], wide[k]);
    } else {
      Codec::load_block(static_cast<const std::uint16_t*>(b) + i, y);
      for (std::size_t k = 0; k < kBlock; ++k) x[k] = Op<float>::apply(x[k], y[k]);
    }
    if constexpr (kDstWide) {
      std::memcpy(static_cast<float*>(dst) + i, x, sizeof(x));
    } else {
      if (divisor > 1) {
        for (std::size_t k = 0; k < kBlock; ++k) x[k] /= scale;
      }
      Codec::store_block(x, static_cast<std::uint16_t*>(dst) + i);
    }
  }
  for (; i < count; ++i) {
    float other;
    if constexpr (kBWide) {
      other = static_cast<const float*>(b)[i];
    } else {
      other = Codec::load(static_cast<const std::uint16_t*>(b)[i]);
    }
    float value = Op<float>::apply(Codec::load(a[i]), other);
    if constexpr (kDstWide) {
      static_cast<float*>(dst)[i] = value;
    } else {
      if (divisor > 1) value /= scale;
      static_cast<std::uint16_t*>(dst)[i] = Codec::store(value);
    }
  }
}

template <template <typename> class Op, typename Codec>
void combine_widening_forms(void* dst, bool dst_wide, const std::uint16_t* a, const void* b,
                            bool b_wide, std::size_t count, int divisor) {
  if (dst_wide) {
    if (b_wide) return combine_widening<Op, Codec, true, true>(dst, a, b, count, divisor);
    return combine_widening<Op, Codec, false, true>(dst, a, b, count, divisor);
  }
  if (b_wide) return combine_widening<Op, Codec, true, false>(dst, a, b, count, divisor);
  return combine_widening<Op, Codec, false, false>(dst, a, b, count, divisor);
}

template <typename Codec>
void dispatch_widening(void* dst, bool dst_wide, const void* a, const void* b, bool b_wide,
                       std::size_t count, ReduceOp op, int divisor) {
  const auto* x = static_cast<const std::uint16_t*>(a);
  switch (op) {
    case ReduceOp::kSum:
      return combine_widening_forms<Sum, Codec>(dst, dst_wide, x, b, b_wide, count, 1);
    case ReduceOp::kMean:
      return combine_widening_forms<Sum, Codec>(dst, dst_wide, x, b, b_wide, count, divisor);
    case ReduceOp::kMin:
      return combine_widening_forms<Min, Codec>(dst, dst_wide, x, b, b_wide, count, 1);
    case ReduceOp::kMax:
      return combine_widening_forms<Max, Codec>(dst, dst_wide, x, b, b_wide, count, 1);
    case ReduceOp::kProd:
      return combine_widening_forms<Prod, Codec>(dst, dst_wide, x, b, b_wide, count, 1);
    case ReduceOp::kBitwiseAnd:
    case ReduceOp::kBitwiseOr:
    case ReduceOp::kBitwiseXor: bitwise_on_floating();
  }
}

inline void reduce_widening(void* dst, bool dst_wide, const void* a, const void* b, bool b_wide,
                            std::size_t count, DataType type, ReduceOp op, int divisor) {
  if (type == DataType::kFloat16) {
    return dispatch_widening<Float16Codec>(dst, dst_wide, a, b, b_wide, count, op, divisor);
  }
  return dispatch_widening<BFloat16Codec>(dst, dst_wide, a, b, b_wide, count, op, divisor);
}

template <typename Codec>
void widen_with(float* dst, const std::uint16_t* src, std::size_t count) {
  std::size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) Codec::load_block(src + i, dst + i);
  for (; i < count; ++i) dst[i] = Codec::load(src[i]);
}

template <typename Codec>
void narrow_with(std::uint16_t* dst, const float* src, std::size_t count, int divisor) {
  const float scale = static_cast<float>(divisor);
  alignas(32) float x[kBlock];
  std::size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    for (std::size_t k = 0; k < kBlock; ++k) x[k] = divisor > 1 ? src[i + k] / scale : src[i + k];
    Codec::store_block(x, dst + i);
  }
  for (; i < count; ++i) dst[i] = Codec::store(divisor > 1 ? src[i] / scale : src[i]);
}

inline void widen(float* dst, const void* src, std::size_t count, DataType type) {
  const auto* s = static_cast<const std::uint16_t*>(src);
  if (type == DataType::kFloat16) return widen_with<Float16Codec>(dst, s, count);
  return widen_with<BFloat16Codec>(dst, s, count);
}

inline void narrow(void* dst, const float* src, std::size_t count, DataType type, int divisor) {
  auto* d = static_cast<std::uint16_t*>(dst);
  if (type == DataType::kFloat16) return narrow_with<Float16Codec>(d, src, count, divisor);
  return narrow_with<BFloat16Codec>(d, src, count, divisor);
}

inline void reduce(void* dst, const void* a, const void* b, std::size_t count, DataType type,
                   ReduceOp op, int divisor) {
  switch (type) {
    case DataType::kFloat16: return dispatch_op16<Float16Codec>(dst, a, b, count, op, divisor);
    case DataType::kBFloat16: return dispatch_bfloat16(dst, a, b, count, op, divisor);
    case DataType::kFloat32: return dispatch_op<float>(dst, a, b, count, op, divisor);
    case DataType::kFloat64: return dispatch_op<double>(dst, a, b, count, op, divisor);
    case DataType::kInt8: return dispatch_op<std::int8_t>(dst, a, b, count, op, divisor);
    case DataType::kUInt8: return dispatch_op<std::uint8_t>(dst, a, b, count, op, divisor);
    case DataType::kInt32: return dispatch_op<std::int32_t>(dst, a, b, count, op, divisor);
    case DataType::kInt64: return dispatch_op<std::int64_t>(dst, a, b, count, op, divisor);
  }
}

// The entry points reduce_kernels.cc and float32_partials.cc call, one set
// per build of this file (reduce_kernels_generic.cc, reduce_kernels_avx2.cc).
void reduce_entry(void* dst, const void* a, const void* b, std::size_t count, DataType type,
                  ReduceOp op, int divisor) {
  reduce(dst, a, b, count, type, op, divisor);
}
void reduce_widening_entry(void* dst, bool dst_wide, const void* a, const void* b, bool b_wide,
                           std::size_t count, DataType type, ReduceOp op, int divisor) {
  reduce_widening(dst, dst_wide, a, b, b_wide, count, type, op, divisor);
}
void widen_entry(float* dst, const void* src, std::size_t count, DataType type) {
  widen(dst, src, count, type);
}
void narrow_entry(void* dst, const float* src, std::size_t count, DataType type, int divisor) {
  narrow(dst, src, count, type, divisor);
}

}  // namespace collective::internal::COLLECTIVE_KERNEL_NAMESPACE
