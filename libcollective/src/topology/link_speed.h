// How fast a NIC's link is, as the Linux kernel reports it in sysfs: hwloc
// names network devices but not their speed. The parsers work on the files'
// text and the reader takes the sysfs root as an argument, so tests run on
// strings and on a fake tree, never on this machine's /sys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "collective/topology.h"
#include "topology/link_speed_text.h"

namespace collective::internal {

// /sys/class/net/<interface>/speed: megabits per second ("25000\n").
// Returns bits per second; 0 when the text says unknown (-1, 0, or the
// 65535 and 4294967295 some drivers report, which ethtool also prints as
// "Unknown!") or is not a decimal number.
std::uint64_t parse_net_speed(std::string_view text);

// /sys/class/infiniband/<device>/ports/<port>/rate: "100 Gb/sec (4X EDR)",
// "2.5 Gb/sec (1X SDR)". Returns bits per second; 0 when not of that form.
std::uint64_t parse_infiniband_rate(std::string_view text);

// /sys/class/infiniband/<device>/ports/<port>/state: "4: ACTIVE". True for
// ACTIVE (4) and ACTIVE_DEFER (5), the states in which the port carries data.
bool infiniband_port_active(std::string_view text);

// The link speed of `nic` on the machine whose sysfs is mounted at
// `sysfs_root` ("/sys" for this one): for kind "openfabrics" the fastest
// active port's rate under class/infiniband/<name>/ports, for every other
// kind class/net/<name>/speed. 0 when unknown: the files absent or
// unreadable (the kernel refuses to read the speed of an interface that is
// down), no port active, or a name that is not a plain file name.
std::uint64_t read_link_bits_per_second(const std::string& sysfs_root, const NetworkDevice& nic);

// Sets every NIC's link_bits_per_second of `node` from `sysfs_root`.
void read_link_speeds(const std::string& sysfs_root, Node& node);

}  // namespace collective::internal
