#include "topology/link_speed.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace collective::internal {
namespace {

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The leading decimal digits of `text` (at most `max_digits`), consumed from
// it; `digits` says how many, 0 when there are none or too many.
std::uint64_t take_digits(std::string_view& text, std::size_t max_digits, std::size_t& digits) {
  std::uint64_t value = 0;
  digits = 0;
  while (digits < text.size() && is_digit(text[digits])) {
    if (digits == max_digits) {
      digits = 0;
      return 0;
    }
    value = value * 10 + static_cast<std::uint64_t>(text[digits] - '0');
    ++digits;
  }
  text.remove_prefix(digits);
  return value;
}

// A small sysfs attribute: its first line, or "" when it cannot be read
// (sysfs answers EINVAL for the speed of an interface that is down).
std::string read_attribute(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  if (line.size() > 256) return "";
  return line;
}

// A device name from hwloc or a dump used as one path component.
bool plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

std::uint64_t parse_net_speed(std::string_view text) {
  text = trimmed(text);
  std::size_t digits = 0;
  // The kernel prints an int; more than 10 digits is not a speed.
  const std::uint64_t megabits = take_digits(text, 10, digits);
  if (digits == 0 || !text.empty()) return 0;  // "-1", "", "fast", "10G"
  // 0 and the all-ones values some drivers use for "unknown".
  if (megabits == 0 || megabits == 0xffff || megabits >= 0xffffffff) return 0;
  return megabits * kBitsPerMegabit;
}

std::uint64_t parse_infiniband_rate(std::string_view text) {
  text = trimmed(text);
  std::size_t digits = 0;
  // Up to 10^6 Gb/s: far beyond any link, and no overflow below.
  const std::uint64_t whole = take_digits(text, 7, digits);
  if (digits == 0) return 0;
  std::uint64_t bits = whole * kBitsPerGigabit;
  if (!text.empty() && text.front() == '.') {
    text.remove_prefix(1);
    const std::uint64_t fraction = take_digits(text, 9, digits);
    if (digits == 0) return 0;
    std::uint64_t scale = kBitsPerGigabit;
    for (std::size_t i = 0; i < digits; ++i) scale /= 10;
    bits += fraction * scale;
  }
  const std::size_t spaces = std::min(text.find_first_not_of(' '), text.size());
  if (spaces == 0) return 0;
  text.remove_prefix(spaces);
  constexpr std::string_view kUnit = "Gb/sec";
  if (text.substr(0, kUnit.size()) != kUnit) return 0;
  text.remove_prefix(kUnit.size());
  if (!text.empty() && text.front() != ' ') return 0;  // "Gb/secs"
  return bits;
}

bool infiniband_port_active(std::string_view text) {
  text = trimmed(text);
  std::size_t digits = 0;
  const std::uint64_t state = take_digits(text, 2, digits);
  if (digits == 0 || text.empty() || text.front() != ':') return false;
  return state == 4 || state == 5;  // IB_PORT_ACTIVE, IB_PORT_ACTIVE_DEFER
}

std::uint64_t read_link_bits_per_second(const std::string& sysfs_root, const NetworkDevice& nic) {
  if (!plain_file_name(nic.name)) return 0;
  const std::filesystem::path root(sysfs_root);
  if (nic.kind != "openfabrics") {
    return parse_net_speed(read_attribute(root / "class" / "net" / nic.name / "speed"));
  }
  // An HCA may have several ports; traffic can take the fastest one up.
  std::uint64_t best = 0;
  std::error_code error;
  const std::filesystem::path ports = root / "class" / "infiniband" / nic.name / "ports";
  for (std::filesystem::directory_iterator port(ports, error), end; !error && port != end;
       port.increment(error)) {
    if (!infiniband_port_active(read_attribute(port->path() / "state"))) continue;
    best = std::max(best, parse_infiniband_rate(read_attribute(port->path() / "rate")));
  }
  return best;
}

void read_link_speeds(const std::string& sysfs_root, Node& node) {
  for (NetworkDevice& nic : node.nics) {
    nic.link_bits_per_second = read_link_bits_per_second(sysfs_root, nic);
  }
}

}  // namespace collective::internal
