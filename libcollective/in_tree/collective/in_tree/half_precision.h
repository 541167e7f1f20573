// float16 (IEEE 754 binary16) and bfloat16 <-> float32, round to nearest
// even, bit-exact and portable: the one conversion the library's kernels, the
// strategies layer, the benchmark and programs preparing 16-bit buffers use.
// Every function has internal linkage (static): the library compiles this
// header into translation units built with different instruction sets
// (-mavx2 -mf16c), whose inline copies must never be merged by the linker.
#pragma once

#include <bit>
#include <cstdint>

namespace collective {

static inline float float16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  const std::uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

static inline std::uint16_t float_to_float16(float value) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  bits &= 0x7FFFFFFFu;
  if (bits >= 0x47800000u) {  // |value| >= 65536, infinity or NaN
    if (bits > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u);  // quiet NaN
    return static_cast<std::uint16_t>(sign | 0x7C00u);
  }
  if (bits < 0x38800000u) {
    // Result is subnormal or zero. Adding 0.5f lines the 10 mantissa bits up
    // at the bottom of the float, and the FPU's own round-to-nearest-even
    // does the rounding.
    const float aligned = std::bit_cast<float>(bits) + 0.5f;
    return static_cast<std::uint16_t>(sign | (std::bit_cast<std::uint32_t>(aligned) - 0x3F000000u));
  }
  // Normal: rebias the exponent (127 -> 15) and round to nearest even on
  // the 13 dropped bits. A carry out of the mantissa correctly bumps the
  // exponent (up to infinity for values in [65520, 65536)).
  const std::uint32_t odd = (bits >> 13) & 1u;
  bits += 0xC8000FFFu + odd;
  return static_cast<std::uint16_t>(sign | (bits >> 13));
}

static inline float bfloat16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

static inline std::uint16_t float_to_bfloat16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<std::uint16_t>((bits >> 16) | 0x40u);  // keep it a quiet NaN
  }
  const std::uint32_t odd = (bits >> 16) & 1u;
  return static_cast<std::uint16_t>((bits + 0x7FFFu + odd) >> 16);
}

}  // namespace collective
