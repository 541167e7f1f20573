// NIC link speeds from sysfs (topology/link_speed.h): the parsers on the
// texts the kernel writes (and on what it must refuse), and the reader on a
// fake sysfs tree made in a temporary directory, never this machine's /sys.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "topology/link_speed.h"

namespace collective::internal {
namespace {

constexpr std::uint64_t kMbit = 1'000'000;
constexpr std::uint64_t kGbit = 1'000'000'000;

TEST(LinkSpeed, NetSpeedIsMegabitsPerSecond) {
  EXPECT_EQ(parse_net_speed("10000\n"), 10'000 * kMbit);
  EXPECT_EQ(parse_net_speed("25000"), 25 * kGbit);
  EXPECT_EQ(parse_net_speed("100\n"), 100 * kMbit);
  EXPECT_EQ(parse_net_speed("  400000 \n"), 400 * kGbit);
  EXPECT_EQ(parse_net_speed("2500\n"), 2'500 * kMbit);
  EXPECT_EQ(parse_net_speed("4294967294"), 4'294'967'294 * kMbit);  // largest not "unknown"
}

TEST(LinkSpeed, NetSpeedUnknownIsZero) {
  for (const char* text : {"-1\n", "-1", "0\n", "65535\n", "4294967295\n", "99999999999",
                           "123456789012345678901234567890", "", "\n", "fast", "10G", "10 000",
                           "1e4", "+1000", "1000.5", "0x2710"}) {
    EXPECT_EQ(parse_net_speed(text), 0u) << "\"" << text << "\"";
  }
}

TEST(LinkSpeed, InfinibandRateIsGigabitsPerSecond) {
  EXPECT_EQ(parse_infiniband_rate("100 Gb/sec (4X EDR)\n"), 100 * kGbit);
  EXPECT_EQ(parse_infiniband_rate("2.5 Gb/sec (1X SDR)\n"), 2'500 * kMbit);
  EXPECT_EQ(parse_infiniband_rate("56 Gb/sec (4X FDR)"), 56 * kGbit);
  EXPECT_EQ(parse_infiniband_rate("200 Gb/sec (4X HDR)"), 200 * kGbit);
  EXPECT_EQ(parse_infiniband_rate("53.125 Gb/sec (1X HDR)"), 53'125 * kMbit);
  EXPECT_EQ(parse_infiniband_rate("40 Gb/sec"), 40 * kGbit);
  EXPECT_EQ(parse_infiniband_rate("0.000000001 Gb/sec"), 1u);
}

TEST(LinkSpeed, InfinibandRateMalformedIsZero) {
  for (const char* text :
       {"", "\n", "Gb/sec (4X EDR)", "100", "100 Mb/sec", "100 Gb/s", "100Gb/sec", "100 Gb/secs",
        "1.2.5 Gb/sec", ". Gb/sec", "1. Gb/sec", "-100 Gb/sec", "0 Gb/sec (4X EDR)",
        "12345678 Gb/sec", "1.0000000001 Gb/sec", "invalid"}) {
    EXPECT_EQ(parse_infiniband_rate(text), 0u) << "\"" << text << "\"";
  }
}

TEST(LinkSpeed, InfinibandPortStates) {
  EXPECT_TRUE(infiniband_port_active("4: ACTIVE\n"));
  EXPECT_TRUE(infiniband_port_active("5: ACTIVE_DEFER\n"));
  for (const char* text : {"1: DOWN\n", "2: INIT", "3: ARMED", "0: NOP", "", "ACTIVE", "4",
                           "44: ACTIVE", "x: ACTIVE"}) {
    EXPECT_FALSE(infiniband_port_active(text)) << "\"" << text << "\"";
  }
}

TEST(LinkSpeed, Text) {
  EXPECT_EQ(link_speed_text(0), "speed unknown");
  EXPECT_EQ(link_speed_text(100 * kGbit), "100 Gb/s");
  EXPECT_EQ(link_speed_text(2'500 * kMbit), "2.5 Gb/s");
  EXPECT_EQ(link_speed_text(53'125 * kMbit), "53.125 Gb/s");
  EXPECT_EQ(link_speed_text(100 * kMbit), "100 Mb/s");
  EXPECT_EQ(link_speed_text(1'500'000), "1.5 Mb/s");
  EXPECT_EQ(link_speed_text(9600), "9600 b/s");
}

// A sysfs tree of our own: class/net/<if>/speed and
// class/infiniband/<dev>/ports/<n>/{state,rate}.
class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "fake_sysfs.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }

  void write(const std::string& relative, const std::string& text) {
    const std::filesystem::path path = root_ / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  void port(const std::string& device, int number, const std::string& state,
            const std::string& rate) {
    const std::string dir = "class/infiniband/" + device + "/ports/" + std::to_string(number) + "/";
    write(dir + "state", state);
    write(dir + "rate", rate);
  }
  std::uint64_t speed(const std::string& name, const std::string& kind) const {
    NetworkDevice nic;
    nic.name = name;
    nic.kind = kind;
    return read_link_bits_per_second(root_.string(), nic);
  }

  std::filesystem::path root_;
};

TEST_F(FakeSysfs, EthernetAndIpoibReadTheInterfaceSpeed) {
  write("class/net/eth0/speed", "25000\n");
  write("class/net/eth1/speed", "-1\n");  // virtio and links without carrier
  write("class/net/ib0/speed", "100000\n");
  write("class/net/veth0/speed", "10000\n");  // what veth always reports
  write("class/net/eth2/speed", "");          // an interface that is down reads nothing
  EXPECT_EQ(speed("eth0", "ethernet"), 25 * kGbit);
  EXPECT_EQ(speed("eth1", "ethernet"), 0u);
  EXPECT_EQ(speed("ib0", "ipoib"), 100 * kGbit);
  EXPECT_EQ(speed("veth0", "ethernet"), 10 * kGbit);
  EXPECT_EQ(speed("eth2", "ethernet"), 0u);
  EXPECT_EQ(speed("eth9", "ethernet"), 0u);  // absent
  EXPECT_EQ(speed("eth0", "other"), 25 * kGbit);
  // Not a plain name: never a path outside class/net.
  write("class/speed", "40000\n");
  EXPECT_EQ(speed("../", "ethernet"), 0u);
  EXPECT_EQ(speed("..", "ethernet"), 0u);
  EXPECT_EQ(speed("", "ethernet"), 0u);
  EXPECT_EQ(speed("eth0/../eth0", "ethernet"), 0u);
}

TEST_F(FakeSysfs, OpenFabricsTakesTheFastestActivePort) {
  port("mlx5_0", 1, "4: ACTIVE\n", "100 Gb/sec (4X EDR)\n");
  port("mlx5_0", 2, "1: DOWN\n", "200 Gb/sec (4X HDR)\n");  // faster but down
  port("mlx5_1", 1, "4: ACTIVE\n", "25 Gb/sec (1X EDR)\n");
  port("mlx5_1", 2, "5: ACTIVE_DEFER\n", "50 Gb/sec (2X EDR)\n");
  port("mlx5_2", 1, "1: DOWN\n", "100 Gb/sec (4X EDR)\n");
  port("mlx5_3", 1, "4: ACTIVE\n", "");                                    // rate unreadable
  write("class/infiniband/mlx5_4/ports/1/rate", "100 Gb/sec (4X EDR)\n");  // no state
  EXPECT_EQ(speed("mlx5_0", "openfabrics"), 100 * kGbit);
  EXPECT_EQ(speed("mlx5_1", "openfabrics"), 50 * kGbit);
  EXPECT_EQ(speed("mlx5_2", "openfabrics"), 0u);
  EXPECT_EQ(speed("mlx5_3", "openfabrics"), 0u);
  EXPECT_EQ(speed("mlx5_4", "openfabrics"), 0u);
  EXPECT_EQ(speed("mlx5_9", "openfabrics"), 0u);  // absent
  // An OpenFabrics device is never read as a net interface, nor the reverse.
  write("class/net/mlx5_2/speed", "40000\n");
  EXPECT_EQ(speed("mlx5_2", "openfabrics"), 0u);
  EXPECT_EQ(speed("mlx5_0", "ethernet"), 0u);
}

TEST_F(FakeSysfs, ReadLinkSpeedsFillsEveryNic) {
  write("class/net/eth0/speed", "1000\n");
  port("mlx5_0", 1, "4: ACTIVE\n", "56 Gb/sec (4X FDR)\n");
  Node node;
  node.nics = {NetworkDevice{"eth0", "ethernet", "", 0, 7},
               NetworkDevice{"mlx5_0", "openfabrics", "", 0, 7},
               NetworkDevice{"eth1", "ethernet", "", 0, 7}};
  read_link_speeds(root_.string(), node);
  EXPECT_EQ(node.nics[0].link_bits_per_second, 1 * kGbit);
  EXPECT_EQ(node.nics[1].link_bits_per_second, 56 * kGbit);
  EXPECT_EQ(node.nics[2].link_bits_per_second, 0u);  // unknown replaces what was there
}

}  // namespace
}  // namespace collective::internal
