// A link speed as people read it ("100 Gb/s"), for the topology's summary
// and the cost model's log lines. Apart from link_speed.h (which reads
// speeds from sysfs into a Topology's nodes) so that the topology's own
// printing needs only this.
#pragma once

#include <cstdint>
#include <string>

namespace collective::internal {

inline constexpr std::uint64_t kBitsPerMegabit = 1'000'000;
inline constexpr std::uint64_t kBitsPerGigabit = 1'000'000'000;

// "100 Gb/s", "2.5 Gb/s", "100 Mb/s"; "speed unknown" for 0.
std::string link_speed_text(std::uint64_t bits_per_second);

}  // namespace collective::internal
