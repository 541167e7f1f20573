// The loop the cached and the streaming copy share (plain_copy.h,
// streaming_copy.h): plain stores up to a 16-byte boundary of the
// destination, then 64 bytes at a time of unaligned 16-byte loads stored to
// the aligned destination, then the rest plain. Unaligned loads and aligned
// stores keep it at the copy's speed whatever the two addresses are modulo
// 16. x86-64 (SSE2) only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <emmintrin.h>

namespace collective::internal {

// kStreaming: non-temporal stores (the caller fences), else plain ones.
template <bool kStreaming>
inline void vector_copy_loop(std::byte* out, const std::byte* in, std::size_t bytes) {
  std::size_t head = (16 - (reinterpret_cast<std::uintptr_t>(out) & 15u)) & 15u;
  if (head > bytes) head = bytes;
  std::memcpy(out, in, head);
  out += head;
  in += head;
  bytes -= head;
  auto store = [](std::byte* to, __m128i value) {
    if constexpr (kStreaming) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(to), value);
    } else {
      _mm_store_si128(reinterpret_cast<__m128i*>(to), value);
    }
  };
  std::size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 48));
    store(out + i, a);
    store(out + i + 16, b);
    store(out + i + 32, c);
    store(out + i + 48, d);
  }
  std::memcpy(out + i, in + i, bytes - i);
}

}  // namespace collective::internal
