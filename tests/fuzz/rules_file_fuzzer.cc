// Fuzzes the rules file parser (selection/rules_file.h): the input is a
// whole COLLECTIVE_RULES_FILE. It either parses into rules with ordered
// byte ranges, or is refused with InvalidArgumentError naming the file;
// anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "collective/errors.h"
#include "selection/rules_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto rules = collective::internal::parse_rules(text, "fuzz.rules");
    for (const auto& rule : rules.rules) {
      (void)collective::internal::describe_rule(rule);
      if (rule.min_bytes > rule.max_bytes) {
        std::fprintf(stderr, "rules_file_fuzzer: accepted min_bytes above max_bytes\n");
        std::abort();
      }
    }
    // What the library accepts, written back, reads as the same rules.
    if (collective::parse_selection_rules(collective::format_selection_rules(rules.rules),
                                          "again") != rules.rules) {
      std::fprintf(stderr, "rules_file_fuzzer: format then parse changed the rules\n");
      std::abort();
    }
  } catch (const collective::InvalidArgumentError& error) {
    if (std::strstr(error.what(), "fuzz.rules") == nullptr) {
      std::fprintf(stderr, "rules_file_fuzzer: refusal does not name the file: %s\n", error.what());
      std::abort();
    }
  }
  return 0;
}
