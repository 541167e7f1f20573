#include "core/resource_unavailable.h"

#include <atomic>

#include "core/log.h"

namespace collective::internal {

void log_shortage(const std::string& message) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    COLLECTIVE_LOG(kWarn, message << " (later shortages of this kind on this process are logged "
                                     "at INFO, COLLECTIVE_DEBUG=INFO)");
  } else {
    COLLECTIVE_LOG(kInfo, message);
  }
}

}  // namespace collective::internal
