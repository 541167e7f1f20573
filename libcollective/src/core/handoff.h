// The two ways the shared-memory algorithms hand a slot from one rank to
// another (transport/shm/two_way_tuner.h says which is faster when, and
// chooses).
#pragma once

#include <cstdint>

namespace collective::internal {

enum class Handoff : std::uint8_t {
  kThroughCache = 0,   // plain stores; the reader pulls the writer's lines
  kThroughMemory = 1,  // non-temporal stores; the reader streams from memory
};

inline const char* way_name(Handoff handoff) {
  return handoff == Handoff::kThroughCache ? "through the cache" : "through memory";
}

}  // namespace collective::internal
