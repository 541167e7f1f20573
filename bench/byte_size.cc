#include "byte_size.h"

#include <cctype>
#include <charconv>
#include <limits>

namespace collective::bench {

std::optional<std::size_t> parse_byte_size(std::string_view text) {
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  std::string suffix;
  for (const char* p = end; p != text.data() + text.size(); ++p) {
    suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
  }
  std::size_t multiplier = 1;
  if (suffix.empty() || suffix == "B") {
    multiplier = 1;
  } else if (suffix == "K" || suffix == "KB" || suffix == "KIB") {
    multiplier = std::size_t{1} << 10;
  } else if (suffix == "M" || suffix == "MB" || suffix == "MIB") {
    multiplier = std::size_t{1} << 20;
  } else if (suffix == "G" || suffix == "GB" || suffix == "GIB") {
    multiplier = std::size_t{1} << 30;
  } else {
    return std::nullopt;
  }
  if (value > std::numeric_limits<std::size_t>::max() / multiplier) return std::nullopt;
  return value * multiplier;
}

std::string format_byte_size(std::size_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  std::size_t value = bytes;
  while (unit < 4 && value >= 1024 && value % 1024 == 0) {
    value /= 1024;
    ++unit;
  }
  return std::to_string(value) + " " + kUnits[unit];
}

}  // namespace collective::bench
