#include "core/resource_slots.h"

#include <atomic>

namespace collective::internal {

std::size_t ResourceSlots::next_index() {
  static std::atomic<std::size_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace collective::internal
