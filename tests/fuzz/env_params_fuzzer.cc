// Fuzzes the environment parser (core/env_params.h): the input is the
// values of every COLLECTIVE_* variable, one per line, in the order below.
// A value is either accepted, giving parameters within their documented
// ranges, or refused with InvalidArgumentError naming the variable;
// anything else (a crash, undefined behaviour, another exception, an
// out-of-range result) is a finding.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "collective/errors.h"
#include "core/env_params.h"

namespace {

// The first nine keep the existing corpus's meaning; new ones go last.
constexpr std::array<const char*, 16> kVariables = {"COLLECTIVE_TIMEOUT",
                                                    "COLLECTIVE_STALL_WARNING",
                                                    "COLLECTIVE_VALIDATE",
                                                    "COLLECTIVE_ALGORITHM",
                                                    "COLLECTIVE_RING_SEGMENT_BYTES",
                                                    "COLLECTIVE_SMALL_MESSAGE_BYTES",
                                                    "COLLECTIVE_MAX_MESSAGE_BYTES",
                                                    "COLLECTIVE_RING_PIPELINE_DEPTH",
                                                    "COLLECTIVE_SHM_HANDOFF",
                                                    "COLLECTIVE_DEBUG",
                                                    "COLLECTIVE_KERNELS",
                                                    "COLLECTIVE_NCCL_HIERARCHICAL",
                                                    "COLLECTIVE_NCCL_RANKS_PER_NODE",
                                                    "COLLECTIVE_FLIGHT_RECORDER",
                                                    "COLLECTIVE_RING_SEGMENT_BYTES_ACROSS_NODES",
                                                    "COLLECTIVE_PEER_CHECK_INTERVAL"};

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "env_params_fuzzer: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::array<std::string, kVariables.size()> values;
  std::array<bool, kVariables.size()> set{};
  std::size_t field = 0;
  for (std::size_t i = 0; i < size && field < values.size(); ++i) {
    if (data[i] == '\n') {
      ++field;
      continue;
    }
    set[field] = true;
    values[field].push_back(static_cast<char>(data[i]));
  }
  auto lookup = [&](const char* name) -> const char* {
    for (std::size_t k = 0; k < kVariables.size(); ++k) {
      if (std::strcmp(name, kVariables[k]) == 0) return set[k] ? values[k].c_str() : nullptr;
    }
    return nullptr;
  };
  try {
    const auto params = collective::internal::parse_env_params(lookup);
    if (params.timeout.count() <= 0 || params.timeout.count() > 1'000'000'000)
      finding("timeout out of range");
    if (!(params.stall_warning_fraction >= 0 && params.stall_warning_fraction < 1))
      finding("stall fraction out of range");
    if (params.ring_segment_bytes < 64 || params.ring_segment_bytes > (std::size_t{1} << 30))
      finding("ring segment out of range");
    if (params.max_message_bytes < 64 || params.max_message_bytes > (std::size_t{1} << 30))
      finding("max message out of range");
    if (params.ring_pipeline_depth < 1 || params.ring_pipeline_depth > 64)
      finding("pipeline depth out of range");
    if (params.nccl_ranks_per_node < 0 || params.nccl_ranks_per_node > (1 << 20))
      finding("ranks per node out of range");
    if (static_cast<int>(params.log_level) < 0 || static_cast<int>(params.log_level) > 4)
      finding("log level out of range");
  } catch (const collective::InvalidArgumentError& error) {
    if (std::strstr(error.what(), "COLLECTIVE_") == nullptr)
      finding("refusal does not name the variable");
  }
  return 0;
}
