#include "core/env_params.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "collective/errors.h"

namespace collective::internal {
namespace {

[[noreturn]] void bad_value(const char* name, const char* value, const char* expected) {
  throw InvalidArgumentError("environment", -1,
                             std::string(name) + "=" + value + " is not " + expected);
}

std::size_t read_size(const char* name, std::size_t fallback, std::size_t minimum) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long parsed = std::strtoull(value, &end, 10);
  std::size_t multiplier = 1;
  if (end != nullptr && (*end == 'K' || *end == 'k')) multiplier = 1024, ++end;
  else if (end != nullptr && (*end == 'M' || *end == 'm')) multiplier = 1024 * 1024, ++end;
  else if (end != nullptr && (*end == 'G' || *end == 'g')) multiplier = 1024 * 1024 * 1024, ++end;
  if (errno != 0 || end == value || *end != '\0' || parsed < minimum / multiplier) {
    bad_value(name, value, ("a byte count >= " + std::to_string(minimum)).c_str());
  }
  return static_cast<std::size_t>(parsed) * multiplier;
}

EnvParams parse() {
  EnvParams params;
  if (const char* value = std::getenv("COLLECTIVE_TIMEOUT"); value != nullptr && *value) {
    char* end = nullptr;
    const double seconds = std::strtod(value, &end);
    if (end == value || *end != '\0' || !(seconds > 0)) {
      bad_value("COLLECTIVE_TIMEOUT", value, "a positive number of seconds");
    }
    params.timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0 + 0.5));
    if (params.timeout.count() == 0) params.timeout = std::chrono::milliseconds(1);
  }
  if (const char* value = std::getenv("COLLECTIVE_ALGORITHM"); value != nullptr && *value) {
    params.forced_algorithm = parse_algorithm(value);
    if (!params.forced_algorithm) {
      bad_value("COLLECTIVE_ALGORITHM", value,
                "one of auto, ring, recursive_doubling, mpi, shared_memory, hierarchical, nccl");
    }
    if (*params.forced_algorithm == Algorithm::kAuto) params.forced_algorithm.reset();
  }
  params.ring_segment_bytes =
      read_size("COLLECTIVE_RING_SEGMENT_BYTES", params.ring_segment_bytes, 64);
  params.small_message_bytes =
      read_size("COLLECTIVE_SMALL_MESSAGE_BYTES", params.small_message_bytes, 0);
  params.max_message_bytes =
      read_size("COLLECTIVE_MAX_MESSAGE_BYTES", params.max_message_bytes, 64);
  if (params.max_message_bytes > (std::size_t{1} << 30)) params.max_message_bytes = std::size_t{1} << 30;
  params.shm_slot_bytes = read_size("COLLECTIVE_SHM_SLOT_BYTES", params.shm_slot_bytes, 4096);
  params.shm_small_bytes = read_size("COLLECTIVE_SHM_SMALL_BYTES", params.shm_small_bytes, 0);
  if (const char* value = std::getenv("COLLECTIVE_RING_PIPELINE_DEPTH"); value != nullptr && *value) {
    char* end = nullptr;
    const long depth = std::strtol(value, &end, 10);
    if (end == value || *end != '\0' || depth < 1 || depth > 64) {
      bad_value("COLLECTIVE_RING_PIPELINE_DEPTH", value, "an integer in 1..64");
    }
    params.ring_pipeline_depth = static_cast<int>(depth);
  }
  return params;
}

}  // namespace

const EnvParams& env_params() {
  static const EnvParams params = parse();
  return params;
}

}  // namespace collective::internal
