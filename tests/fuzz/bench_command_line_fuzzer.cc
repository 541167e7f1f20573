// Fuzzes collective_bench's command line (bench/bench_options.h): the input
// is argv, one argument per line. Every command line is either accepted,
// giving options the benchmark can run (a size range in order, a sweep
// inside it), or refused with UsageError; anything else (a crash, undefined
// behaviour, another exception escaping, a sweep that never ends) is a
// finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_options.h"

namespace {

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "bench_command_line_fuzzer: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> arguments{"collective_bench"};
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') {
      arguments.push_back(current);
      current.clear();
    } else {
      current.push_back(static_cast<char>(data[i]));
    }
  }
  if (!current.empty()) arguments.push_back(current);
  if (arguments.size() > 64) return 0;
  std::vector<const char*> argv;
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());
  try {
    const auto parsed =
        collective::bench::parse_command_line(static_cast<int>(argv.size()), argv.data());
    if (parsed.show_help || parsed.show_version) return 0;
    const auto& options = parsed.options;
    if (options.min_bytes > options.max_bytes) finding("accepted -b above -e");
    // The sweep: non-empty, within [-b, -e], increasing. An additive sweep
    // of millions of sizes is a legal (if slow) request, as in nccl-tests:
    // not built here.
    if (options.step_bytes > 0 &&
        (options.max_bytes - options.min_bytes) / options.step_bytes > 1000000) {
      return 0;
    }
    const auto sizes = options.sizes();
    if (sizes.empty()) finding("accepted an empty sweep");
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < options.min_bytes || sizes[i] > options.max_bytes)
        finding("size outside [-b, -e]");
      if (i > 0 && sizes[i] <= sizes[i - 1]) finding("sizes not increasing");
    }
  } catch (const collective::bench::UsageError&) {
  }
  return 0;
}
