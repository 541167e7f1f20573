#include "collective/distribute/communication_options.h"

#include <cmath>
#include <string>

#include "collective/environment.h"
#include "collective/options.h"

namespace collective::distribute {

std::string_view to_string(CommunicationImplementation implementation) {
  switch (implementation) {
    case CommunicationImplementation::kAuto: return "AUTO";
    case CommunicationImplementation::kRing: return "RING";
    case CommunicationImplementation::kNccl: return "NCCL";
  }
  return "unknown";
}

Algorithm host_algorithm_for(CommunicationImplementation implementation) {
  switch (implementation) {
    case CommunicationImplementation::kAuto: return Algorithm::kAuto;
    case CommunicationImplementation::kRing: return Algorithm::kRing;
    // NCCL serves device memory; host tensors take the ring (tf.distribute's
    // rule for CommunicationImplementation.NCCL with CPU tensors).
    case CommunicationImplementation::kNccl: return Algorithm::kRing;
  }
  return Algorithm::kAuto;
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
