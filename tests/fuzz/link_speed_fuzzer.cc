// Fuzzes the sysfs link speed parsers (topology/link_speed.h) on any text:
// each answers a speed or 0 (unknown), never anything else, and a speed
// they accept reads back the same from the text the library prints for it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "topology/link_speed.h"

namespace {

void check(bool ok, const char* what, const std::string& text) {
  if (ok) return;
  std::fprintf(stderr, "link_speed_fuzzer: %s for \"%s\"\n", what, text.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace collective::internal;
  const std::string text(reinterpret_cast<const char*>(data), size);

  const std::uint64_t net = parse_net_speed(text);
  if (net != 0) {
    const std::uint64_t megabits = net / 1'000'000;
    check(net % 1'000'000 == 0, "net speed not whole megabits", text);
    check(megabits != 0xffff && megabits < 0xffffffff, "net speed 'unknown' accepted", text);
    check(parse_net_speed(std::to_string(megabits)) == net, "net speed does not read back", text);
  }

  const std::uint64_t rate = parse_infiniband_rate(text);
  check(rate < 10'000'000ull * 1'000'000'000ull, "InfiniBand rate beyond its bound", text);
  if (rate >= 1'000'000'000) {
    // "53.125 Gb/s" as the library prints it, in the kernel's unit.
    std::string printed = link_speed_text(rate);
    check(printed.size() > 4 && printed.compare(printed.size() - 4, 4, "Gb/s") == 0,
          "rate not printed in Gb/s", text);
    printed.replace(printed.size() - 4, 4, "Gb/sec");
    check(parse_infiniband_rate(printed) == rate, "InfiniBand rate does not read back", text);
  }
  check(!link_speed_text(net).empty() && !link_speed_text(rate).empty(), "empty speed text", text);

  (void)infiniband_port_active(text);
  return 0;
}
