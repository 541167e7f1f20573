// An MPI handle as an integer, for hashing: Open MPI's handles are
// pointers, MPICH's integers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace collective::pmpi {

template <typename Handle>
std::uintptr_t handle_bits(Handle handle) {
  if constexpr (std::is_pointer_v<Handle>) {
    return reinterpret_cast<std::uintptr_t>(handle);
  } else {
    return static_cast<std::uintptr_t>(handle);
  }
}

// A slot of a table of 2^bits slots for `handle` (Fibonacci hashing spreads
// both kinds of handle over the slots).
template <int bits, typename Handle>
std::size_t hashed_slot(Handle handle) {
  static_assert(bits > 0 && bits < 32);
  return static_cast<std::size_t>((std::uint64_t{handle_bits(handle)} * 0x9E3779B97F4A7C15ull) >>
                                  (64 - bits));
}

}  // namespace collective::pmpi
