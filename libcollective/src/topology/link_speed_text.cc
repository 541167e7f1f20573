#include "topology/link_speed_text.h"

namespace collective::internal {
namespace {

// "2.5" of 2'500'000'000 bits with unit 10^9: the quotient and the remainder
// as decimals without trailing zeros.
std::string decimal(std::uint64_t value, std::uint64_t unit) {
  std::string text = std::to_string(value / unit);
  std::uint64_t rest = value % unit;
  if (rest == 0) return text;
  std::string fraction;
  for (std::uint64_t place = unit / 10; place > 0 && rest > 0; place /= 10) {
    fraction += static_cast<char>('0' + rest / place);
    rest %= place;
  }
  return text + "." + fraction;
}

}  // namespace

std::string link_speed_text(std::uint64_t bits_per_second) {
  if (bits_per_second == 0) return "speed unknown";
  if (bits_per_second >= kBitsPerGigabit)
    return decimal(bits_per_second, kBitsPerGigabit) + " Gb/s";
  if (bits_per_second >= kBitsPerMegabit)
    return decimal(bits_per_second, kBitsPerMegabit) + " Mb/s";
  return std::to_string(bits_per_second) + " b/s";
}

}  // namespace collective::internal
