// Bytes per element of each DataType, by its value: one table for the
// public element_size() (which raises on an unknown value) and for the
// calls' hot paths, which ask several times a call and inline it.
#pragma once

#include <array>
#include <cstddef>

#include "collective/types.h"

namespace collective::internal {

inline constexpr std::array<std::size_t, kNumDataTypes> kDataTypeSizes = {2, 2, 4, 8, 1, 1, 4, 8};

// element_size() without the call; an unknown value still raises there.
inline std::size_t element_bytes_of(DataType type) {
  const auto index = static_cast<std::size_t>(type);
  return index < kDataTypeSizes.size() ? kDataTypeSizes[index] : element_size(type);
}

}  // namespace collective::internal
