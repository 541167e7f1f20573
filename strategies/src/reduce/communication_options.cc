#include "collective/distribute/communication_options.h"

#include <cmath>
#include <string>

#include "collective/environment.h"
#include "collective/errors.h"
#include "collective/options.h"

namespace collective::distribute {

std::string_view to_string(CollectiveCommunication implementation) {
  switch (implementation) {
    case CollectiveCommunication::kAuto: return "AUTO";
    case CollectiveCommunication::kRing: return "RING";
    case CollectiveCommunication::kNccl: return "NCCL";
  }
  return "unknown";
}

Algorithm host_algorithm_for(CollectiveCommunication implementation, std::string_view operation) {
  switch (implementation) {
    case CollectiveCommunication::kAuto: return Algorithm::kAuto;
    case CollectiveCommunication::kRing: return Algorithm::kRing;
    case CollectiveCommunication::kNccl:
      // The core's rule for a forced algorithm it cannot serve: raise.
      throw UnsupportedError(std::string(operation), -1,
                             "CollectiveCommunication::kNccl was requested, but NCCL serves device "
                             "buffers only and the strategies layer's tensors are in host memory; "
                             "use kAuto or kRing");
  }
  throw InvalidArgumentError(
      std::string(operation), -1,
      "unknown CollectiveCommunication value " + std::to_string(static_cast<int>(implementation)));
}

namespace {

// Whole milliseconds, rounded up; a longer value than libcollective keeps
// is cut to kLongestTimeout instead of overflowing into a negative count.
std::chrono::milliseconds milliseconds_from_seconds(double seconds) {
  const double milliseconds = std::ceil(seconds * 1000.0);
  if (milliseconds >= static_cast<double>(kLongestTimeout.count())) return kLongestTimeout;
  return std::chrono::milliseconds(static_cast<std::int64_t>(milliseconds));
}

// COLLECTIVE_TIMEOUT as libcollective parses it (300 s when unset; a
// malformed value raises InvalidArgumentError naming it).
std::chrono::milliseconds process_default_timeout() { return Environment::default_timeout(); }

}  // namespace

std::chrono::milliseconds effective_timeout(const CommunicationOptions& options) {
  if (options.timeout_seconds && std::isfinite(*options.timeout_seconds) &&
      *options.timeout_seconds > 0) {
    return milliseconds_from_seconds(*options.timeout_seconds);
  }
  return process_default_timeout();
}

}  // namespace collective::distribute
