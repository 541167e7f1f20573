// float16 and bfloat16 <-> float, round to nearest even: the benchmark's
// own copy, so that it needs only libcollective's public headers. Used to
// write and read exact inputs and results, and by the MPI baseline's
// user-defined ops (MPI has no 16-bit floating types).
#pragma once

#include <bit>
#include <cstdint>

namespace collective::bench {

inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  const std::uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;  // zero or subnormal
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline std::uint16_t float_to_half(float value) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  bits &= 0x7FFFFFFFu;
  if (bits > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u);  // NaN
  if (bits >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds to inf
  if (bits < 0x38800000u) {
    // Subnormal or zero: let the FPU round the value scaled to 2^-24 units.
    const float scaled = std::bit_cast<float>(bits) * 0x1p24f;
    const auto units = static_cast<std::uint32_t>(__builtin_nearbyintf(scaled));
    return static_cast<std::uint16_t>(sign | units);
  }
  const std::uint32_t odd = (bits >> 13) & 1u;
  bits += 0xC8000FFFu + odd;  // rebias 127 -> 15 and round on the 13 dropped bits
  return static_cast<std::uint16_t>(sign | (bits >> 13));
}

inline float bfloat16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

inline std::uint16_t float_to_bfloat16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  const std::uint32_t odd = (bits >> 16) & 1u;
  return static_cast<std::uint16_t>((bits + 0x7FFFu + odd) >> 16);
}

}  // namespace collective::bench
