#include "core/env_params.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <string_view>

#include "collective/errors.h"
#include "collective/in_tree/parameters.h"

namespace collective::internal {
namespace {

// Longest accepted timeout: 10^6 s (11.5 days) keeps the milliseconds and
// every deadline computed from them far from overflow.
constexpr double kMaxTimeoutSeconds = 1e6;

[[noreturn]] void bad_value(const char* name, const char* value, const std::string& expected) {
  throw InvalidArgumentError("environment", -1,
                             std::string(name) + "=" + value + " is not " + expected);
}

const char* lookup_set(const EnvLookup& lookup, const char* name) {
  const char* value = lookup(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// A byte count with an optional K/M/G suffix (powers of 1024), in
// [minimum, maximum].
std::size_t read_size(const EnvLookup& lookup, const char* name, std::size_t fallback,
                      std::size_t minimum, std::size_t maximum) {
  const char* value = lookup_set(lookup, name);
  if (value == nullptr) return fallback;
  const std::string expected = "a byte count in [" + std::to_string(minimum) + ", " +
                               std::to_string(maximum) + "] (suffix K, M or G allowed)";
  // strtoull accepts a sign and wraps negatives around: only digits here.
  if (*value < '0' || *value > '9') bad_value(name, value, expected);
  char* end = nullptr;
  errno = 0;
  const unsigned long long parsed = std::strtoull(value, &end, 10);
  if (errno != 0) bad_value(name, value, expected);
  unsigned long long multiplier = 1;
  switch (*end) {
    case 'K':
    case 'k':
      multiplier = 1ull << 10;
      ++end;
      break;
    case 'M':
    case 'm':
      multiplier = 1ull << 20;
      ++end;
      break;
    case 'G':
    case 'g':
      multiplier = 1ull << 30;
      ++end;
      break;
    default: break;
  }
  if (*end != '\0' || parsed > std::numeric_limits<std::size_t>::max() / multiplier) {
    bad_value(name, value, expected);
  }
  const std::size_t bytes = static_cast<std::size_t>(parsed * multiplier);
  if (bytes < minimum || bytes > maximum) bad_value(name, value, expected);
  return bytes;
}

// A decimal number in [minimum, maximum]; no inf or nan.
double read_number(const char* name, const char* value, double minimum, double maximum,
                   const std::string& expected) {
  char* end = nullptr;
  errno = 0;
  const double parsed = std::strtod(value, &end);
  if (end == value || *end != '\0' || errno != 0 || !std::isfinite(parsed) || parsed < minimum ||
      parsed > maximum) {
    bad_value(name, value, expected);
  }
  return parsed;
}

bool read_switch(const EnvLookup& lookup, const char* name, bool fallback) {
  const char* value = lookup_set(lookup, name);
  if (value == nullptr) return fallback;
  const std::string_view text(value);
  if (text == "1" || text == "on" || text == "ON" || text == "true" || text == "yes") return true;
  if (text == "0" || text == "off" || text == "OFF" || text == "false" || text == "no")
    return false;
  bad_value(name, value, "0 or 1 (also off/on, false/true, no/yes)");
}

// A setting of "auto" (none: `into` is reset, measured) or one of two
// named ways.
template <typename Way>
void read_auto_or(const EnvLookup& lookup, const char* name, std::optional<Way>& into,
                  const std::pair<const char*, Way> (&ways)[2]) {
  const char* value = lookup_set(lookup, name);
  if (value == nullptr) return;
  const std::string text = value;
  if (text == "auto") {
    into.reset();
    return;
  }
  for (const auto& [spelled, way] : ways) {
    if (text == spelled) {
      into = way;
      return;
    }
  }
  bad_value(name, value, std::string("one of auto, ") + ways[0].first + ", " + ways[1].first);
}

}  // namespace

EnvParams parse_env_params(const EnvLookup& lookup) {
  EnvParams params;
  if (const char* value = lookup_set(lookup, "COLLECTIVE_TIMEOUT")) {
    const double seconds = read_number("COLLECTIVE_TIMEOUT", value, 0.0, kMaxTimeoutSeconds,
                                       "a positive number of seconds, at most 1e6");
    if (!(seconds > 0)) bad_value("COLLECTIVE_TIMEOUT", value, "a positive number of seconds");
    params.timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0 + 0.5));
    if (params.timeout.count() == 0) params.timeout = std::chrono::milliseconds(1);
  }
  if (const char* value = lookup_set(lookup, "COLLECTIVE_STALL_WARNING")) {
    params.stall_warning_fraction =
        read_number("COLLECTIVE_STALL_WARNING", value, 0.0, 0.999,
                    "a fraction of the timeout in [0, 1) (0 turns the warning off)");
  }
  if (const char* value = lookup_set(lookup, "COLLECTIVE_PEER_CHECK_INTERVAL")) {
    const double seconds = read_number("COLLECTIVE_PEER_CHECK_INTERVAL", value, 0.001, 60.0,
                                       "a number of seconds from 0.001 to 60");
    params.peer_check_interval =
        std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0 + 0.5));
  }
  params.validate = read_switch(lookup, "COLLECTIVE_VALIDATE", params.validate);
  params.deterministic = read_switch(lookup, "COLLECTIVE_DETERMINISTIC", params.deterministic);
  if (const char* value = lookup_set(lookup, "COLLECTIVE_ALGORITHM")) {
    params.forced_algorithm = parse_algorithm(value);
    if (!params.forced_algorithm) {
      bad_value("COLLECTIVE_ALGORITHM", value,
                "one of auto, ring, recursive_doubling, mpi, shared_memory, hierarchical, nccl");
    }
    if (*params.forced_algorithm == Algorithm::kAuto) params.forced_algorithm.reset();
  }
  constexpr std::size_t kMaxMessage = std::size_t{1} << 30;
  params.ring_segment_bytes = read_size(lookup, "COLLECTIVE_RING_SEGMENT_BYTES",
                                        params.ring_segment_bytes, 64, kMaxMessage);
  params.ring_segment_bytes_across_nodes =
      read_size(lookup, "COLLECTIVE_RING_SEGMENT_BYTES_ACROSS_NODES",
                params.ring_segment_bytes_across_nodes, 64, kMaxMessage);
  params.small_message_bytes =
      read_size(lookup, "COLLECTIVE_SMALL_MESSAGE_BYTES", params.small_message_bytes, 0,
                std::numeric_limits<std::size_t>::max());
  // Above 2^30 B a message's int count could overflow for any element size
  // the splitting uses, so larger values are refused rather than clamped.
  params.max_message_bytes = read_size(lookup, "COLLECTIVE_MAX_MESSAGE_BYTES",
                                       params.max_message_bytes, kMinMessageBytes, kMaxMessage);
  params.shm_slot_bytes =
      read_size(lookup, "COLLECTIVE_SHM_SLOT_BYTES", params.shm_slot_bytes, 4096, kMaxMessage);
  params.shm_small_bytes = read_size(lookup, "COLLECTIVE_SHM_SMALL_BYTES", params.shm_small_bytes,
                                     0, std::numeric_limits<std::size_t>::max());
  read_auto_or(lookup, "COLLECTIVE_SHM_HANDOFF", params.shm_handoff,
               {{"cache", Handoff::kThroughCache}, {"memory", Handoff::kThroughMemory}});
  read_auto_or(lookup, "COLLECTIVE_SHM_BLOCK_ROUTE", params.shm_block_route,
               {{"kernel", BlockRoute::kKernelCopy}, {"slots", BlockRoute::kSlots}});
  if (const char* value = lookup_set(lookup, "COLLECTIVE_RING_PIPELINE_DEPTH")) {
    params.ring_pipeline_depth = static_cast<int>(
        read_number("COLLECTIVE_RING_PIPELINE_DEPTH", value, 1, 64, "an integer in 1..64"));
    if (std::to_string(params.ring_pipeline_depth) != value) {
      bad_value("COLLECTIVE_RING_PIPELINE_DEPTH", value, "an integer in 1..64");
    }
  }
  if (const char* value = lookup_set(lookup, "COLLECTIVE_DEBUG")) {
    const std::string_view text(value);
    if (text == "NONE" || text == "none" || text == "0") {
      params.log_level = LogLevel::kNone;
    } else if (text == "WARN" || text == "warn") {
      params.log_level = LogLevel::kWarn;
    } else if (text == "INFO" || text == "info" || text == "1") {
      params.log_level = LogLevel::kInfo;
    } else if (text == "DEBUG" || text == "debug" || text == "2") {
      params.log_level = LogLevel::kDebug;
    } else if (text == "TRACE" || text == "trace" || text == "3") {
      params.log_level = LogLevel::kTrace;
    } else {
      bad_value("COLLECTIVE_DEBUG", value, "one of NONE, WARN, INFO, DEBUG, TRACE (or 0-3)");
    }
  }
  if (const char* value = lookup_set(lookup, "COLLECTIVE_KERNELS")) {
    const std::string_view text(value);
    if (text == "generic") {
      params.generic_kernels = true;
    } else if (text != "auto") {
      bad_value("COLLECTIVE_KERNELS", value, "one of auto, generic");
    }
  }
  if (const char* value = lookup_set(lookup, "COLLECTIVE_NCCL_HIERARCHICAL")) {
    const std::string_view text(value);
    if (text == "off" || text == "0") {
      params.nccl_hierarchical_off = true;
    } else if (text != "auto") {
      bad_value("COLLECTIVE_NCCL_HIERARCHICAL", value, "one of auto, off");
    }
  }
  if (const char* value = lookup_set(lookup, "COLLECTIVE_NCCL_RANKS_PER_NODE")) {
    const std::string expected = "an integer in 1..1048576";
    params.nccl_ranks_per_node = static_cast<int>(
        read_number("COLLECTIVE_NCCL_RANKS_PER_NODE", value, 1, 1 << 20, expected));
    if (std::to_string(params.nccl_ranks_per_node) != value) {
      bad_value("COLLECTIVE_NCCL_RANKS_PER_NODE", value, expected);
    }
  }
  // Paths: any text names a file; it is read (and refused) where used.
  if (const char* value = lookup_set(lookup, "COLLECTIVE_TOPOLOGY_FILE"))
    params.topology_file = value;
  if (const char* value = lookup_set(lookup, "COLLECTIVE_TOPOLOGY_DUMP"))
    params.topology_dump = value;
  if (const char* value = lookup_set(lookup, "COLLECTIVE_RULES_FILE")) params.rules_file = value;
  if (const char* value = lookup_set(lookup, "COLLECTIVE_FLIGHT_RECORDER")) {
    const std::string expected = "a number of calls in 0..1048576 (0 turns the recorder off)";
    const double calls = read_number("COLLECTIVE_FLIGHT_RECORDER", value, 0, 1 << 20, expected);
    params.flight_recorder_calls = static_cast<std::size_t>(calls);
    if (std::to_string(params.flight_recorder_calls) != value) {
      bad_value("COLLECTIVE_FLIGHT_RECORDER", value, expected);
    }
  }
  if (lookup_set(lookup, "COLLECTIVE_FLIGHT_RECORDER_SIGNAL") != nullptr) {
    params.flight_recorder_signal = read_switch(lookup, "COLLECTIVE_FLIGHT_RECORDER_SIGNAL", true);
  }
  if (const char* value = lookup_set(lookup, "COLLECTIVE_FLIGHT_RECORDER_DIR")) {
    params.flight_recorder_dir = value;
  }
  if (const char* value = lookup_set(lookup, "COLLECTIVE_TRACE")) params.trace_dir = value;
  return params;
}

EnvParams current_env_params() {
  return parse_env_params([](const char* name) -> const char* { return std::getenv(name); });
}

const EnvParams& env_params() {
  static const EnvParams params = current_env_params();
  return params;
}

}  // namespace collective::internal

namespace collective {

// The public reader: the same parsers, on the live environment.
namespace {
const char* live_value(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}
}  // namespace

std::optional<double> seconds_parameter(const char* name, double max_seconds) {
  const char* value = live_value(name);
  if (value == nullptr) return std::nullopt;
  char limit[32];
  std::snprintf(limit, sizeof(limit), "%.15g", max_seconds);
  const std::string expected = std::string("a number of seconds in (0, ") + limit + "]";
  // strtod also reads hex, inf and exponents: a plain decimal only.
  for (const char* c = value; *c != '\0'; ++c) {
    if ((*c < '0' || *c > '9') && *c != '.') internal::bad_value(name, value, expected);
  }
  const double seconds = internal::read_number(name, value, 0.0, max_seconds, expected);
  if (!(seconds > 0)) internal::bad_value(name, value, expected);
  return seconds;
}

std::optional<long long> integer_parameter(const char* name, long long minimum, long long maximum) {
  const char* value = live_value(name);
  if (value == nullptr) return std::nullopt;
  const std::string expected =
      "a decimal integer in [" + std::to_string(minimum) + ", " + std::to_string(maximum) + "]";
  long long parsed = 0;
  for (const char* c = value; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9') internal::bad_value(name, value, expected);
    if (parsed > (maximum - (*c - '0')) / 10) internal::bad_value(name, value, expected);
    parsed = parsed * 10 + (*c - '0');
  }
  if (parsed < minimum || parsed > maximum) internal::bad_value(name, value, expected);
  return parsed;
}

std::optional<std::size_t> bytes_parameter(const char* name, std::size_t minimum,
                                           std::size_t maximum) {
  if (live_value(name) == nullptr) return std::nullopt;
  return internal::read_size([](const char* n) -> const char* { return std::getenv(n); }, name, 0,
                             minimum, maximum);
}

std::optional<bool> switch_parameter(const char* name) {
  if (live_value(name) == nullptr) return std::nullopt;
  return internal::read_switch([](const char* n) -> const char* { return std::getenv(n); }, name,
                               false);
}

}  // namespace collective
