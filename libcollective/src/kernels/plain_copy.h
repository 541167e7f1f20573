// Copies through the cache (memcpy's stores), safe from one slow path of
// glibc's memcpy: between 2 KiB and its non-temporal threshold (about
// 1 MiB here) glibc 2.36 copies with `rep movsb`, which on AMD Zen runs at
// 1/16 to 1/30 of its speed when the two addresses differ modulo 16 (a
// 64 KiB copy 18.5 us against 1.1; docs/performance_history.md). The
// v-collectives' displacements, a float buffer at an odd element and
// user buffers against the library's aligned slots all make such pairs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace collective::internal {

// Copies at or below this length go to memcpy whatever their alignment.
inline constexpr std::size_t kMisalignedCopyThreshold = 2048;

// Whether addresses `to` and `from` differ modulo 16: a copy between them
// of more than kMisalignedCopyThreshold bytes is one `rep movsb` handles
// slowly (memcpy, and the kernel's process_vm_readv alike).
constexpr bool misaligned_pair(std::uintptr_t to, std::uintptr_t from) {
  return ((to ^ from) & 15u) != 0;
}

// memcpy's result (no overlap); a misaligned pair longer than
// kMisalignedCopyThreshold goes through a vector loop (unaligned loads,
// aligned stores) instead of memcpy.
void plain_copy(void* to, const void* from, std::size_t bytes);

}  // namespace collective::internal
