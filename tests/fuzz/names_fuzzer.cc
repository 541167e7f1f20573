// Fuzzes the parsers of names (types.h, algorithm.h) that command lines and
// environment variables feed: any string either parses to a value whose
// canonical name parses back to the same value, or is refused.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "collective/algorithm.h"
#include "collective/types.h"

namespace {

template <typename Parse>
void round_trip(std::string_view text, Parse parse) {
  const auto parsed = parse(text);
  if (!parsed) return;
  const auto again = parse(collective::to_string(*parsed));
  if (!again || *again != *parsed) {
    std::fprintf(stderr, "names_fuzzer: '%.*s' does not round-trip\n",
                 static_cast<int>(text.size()), text.data());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  round_trip(text, [](std::string_view t) { return collective::parse_data_type(t); });
  round_trip(text, [](std::string_view t) { return collective::parse_reduce_op(t); });
  round_trip(text, [](std::string_view t) { return collective::parse_algorithm(t); });
  round_trip(text, [](std::string_view t) { return collective::parse_collective_kind(t); });
  return 0;
}
