// Topologies from files: the fixtures (a laptop as an hwloc synthetic
// description, a two-socket server and an 8-GPU node as hwloc XML, a
// 4-node cluster as a dump), the dump round trip, and malformed input.
#include <gtest/gtest.h>

#include <string>

#include "collective/errors.h"
#include "collective/topology.h"

namespace collective {
namespace {

std::string fixture(const char* name) { return std::string(COLLECTIVE_FIXTURES_DIR) + "/" + name; }

TEST(TopologyFile, LaptopFromSyntheticDescription) {
  const Topology topology = Topology::load(fixture("laptop.synthetic"), 1, 4);
  ASSERT_EQ(topology.node_count(), 1);
  ASSERT_EQ(topology.size(), 4);
  const Node& node = topology.node(0);
  EXPECT_EQ(node.packages, 1);
  EXPECT_EQ(node.numa_nodes, 1);
  EXPECT_EQ(node.cores, 4);
  EXPECT_EQ(node.processing_units, 8);
  EXPECT_EQ(node.memory_bytes, 16000000000u);
  EXPECT_EQ(node.l3_cache_bytes, 12000000u);
  EXPECT_TRUE(node.gpus.empty());
  EXPECT_EQ(node.source.rfind("synthetic ", 0), 0u) << node.source;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(topology.node_of(rank), 0);
    EXPECT_EQ(topology.local_rank(rank), rank);
  }
  EXPECT_FALSE(topology.oversubscribed());
  EXPECT_TRUE(topology.nodes_alike());
}

TEST(TopologyFile, TwoSocketServerFromHwlocXml) {
  const Topology topology = Topology::load(fixture("two_socket_server.xml"), 1, 2);
  const Node& node = topology.node(0);
  EXPECT_EQ(node.host, "server");
  EXPECT_EQ(node.packages, 2);
  EXPECT_EQ(node.numa_nodes, 2);
  EXPECT_EQ(node.cores, 32);
  EXPECT_EQ(node.processing_units, 64);
  EXPECT_EQ(node.memory_bytes, std::uint64_t{256} << 30);
  EXPECT_EQ(node.l3_cache_bytes, std::uint64_t{32} << 20);
  EXPECT_TRUE(node.gpus.empty());
  ASSERT_EQ(node.nics.size(), 3u);
  EXPECT_EQ(node.nics[0].name, "eth0");
  EXPECT_EQ(node.nics[0].kind, "ethernet");
  EXPECT_EQ(node.nics[0].numa_node, 0);
  EXPECT_EQ(node.nics[0].pci_bus_id, "0000:18:00.0");
  EXPECT_EQ(node.nics[1].name, "mlx5_0");
  EXPECT_EQ(node.nics[1].kind, "openfabrics");
  EXPECT_EQ(node.nics[2].kind, "ipoib");
  // hwloc XML carries no link speed: unknown, never this machine's.
  for (const NetworkDevice& nic : node.nics) EXPECT_EQ(nic.link_bits_per_second, 0u) << nic.name;
}

TEST(TopologyFile, EightGpuNodeFromHwlocXml) {
  const Topology topology = Topology::load(fixture("eight_gpu_node.xml"), 2, 8);
  ASSERT_EQ(topology.node_count(), 2);
  EXPECT_EQ(topology.node(0).host, "gpunode-0");
  EXPECT_EQ(topology.node(1).host, "gpunode-1");
  EXPECT_EQ(topology.gpus_per_node(), 8);
  const Node& node = topology.node(1);
  ASSERT_EQ(node.gpus.size(), 8u);
  for (int g = 0; g < 8; ++g) {
    const GpuDevice& gpu = node.gpus[static_cast<std::size_t>(g)];
    EXPECT_EQ(gpu.name, "cuda" + std::to_string(g));
    EXPECT_EQ(gpu.model, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(gpu.numa_node, g < 4 ? 0 : 1) << gpu.name;
  }
  EXPECT_EQ(node.gpus[0].pci_bus_id, "0000:18:00.0");
  ASSERT_EQ(node.nics.size(), 2u);
  EXPECT_EQ(node.nics[1].name, "mlx5_1");
  EXPECT_EQ(node.nics[1].numa_node, 1);
  EXPECT_EQ(node.nics[1].link_bits_per_second, 0u);
  EXPECT_EQ(node.ranks, (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(topology.node_of(9), 1);
  EXPECT_EQ(topology.local_rank(9), 1);
}

TEST(TopologyFile, FourNodeClusterDump) {
  const Topology topology = Topology::load(fixture("four_node_cluster.json"));
  ASSERT_EQ(topology.node_count(), 4);
  ASSERT_EQ(topology.size(), 32);
  EXPECT_EQ(topology.min_ranks_per_node(), 8);
  EXPECT_EQ(topology.max_ranks_per_node(), 8);
  EXPECT_TRUE(topology.nodes_alike());
  for (int rank = 0; rank < 32; ++rank) {
    EXPECT_EQ(topology.node_of(rank), rank / 8);
    EXPECT_EQ(topology.local_rank(rank), rank % 8);
  }
  EXPECT_EQ(topology.node(3).host, "node4");
  ASSERT_EQ(topology.node(2).nics.size(), 3u);
  EXPECT_EQ(topology.node(2).nics[0].link_bits_per_second, 25'000'000'000u);  // eth0
  EXPECT_EQ(topology.node(2).nics[1].kind, "openfabrics");
  EXPECT_EQ(topology.node(2).nics[1].link_bits_per_second, 100'000'000'000u);  // mlx5_0
  EXPECT_EQ(topology.node(2).nics[2].link_bits_per_second, 100'000'000'000u);  // ib0
  // Replicating the cluster's first machine elsewhere works too.
  const Topology two = Topology::load(fixture("four_node_cluster.json"), 2, 3);
  EXPECT_EQ(two.size(), 6);
  EXPECT_EQ(two.node(1).processing_units, 64);
}

TEST(TopologyFile, DumpRoundTrips) {
  const Topology original = Topology::load(fixture("eight_gpu_node.xml"), 3, 5);
  const std::string json = original.to_json();
  const Topology again = Topology::parse(json, "round trip");
  EXPECT_EQ(again.to_json(), json);
  EXPECT_EQ(again.describe(), original.describe());
}

TEST(TopologyFile, DumpRoundTripKeepsLinkSpeeds) {
  const Topology original = Topology::parse(
      R"({"nodes": [{"host": "a", "processing_units": 2, "ranks": [0],
                     "nics": [{"name": "eth0", "kind": "ethernet", "link_bits_per_second": 25000000000},
                              {"name": "mlx5_0", "kind": "openfabrics", "link_bits_per_second": 200000000000},
                              {"name": "eth1", "kind": "ethernet"}]},
                    {"host": "b", "processing_units": 2, "ranks": [1],
                     "nics": [{"name": "eth0", "kind": "ethernet", "link_bits_per_second": 1000000000000000}]}]})",
      "speeds");
  const std::vector<NetworkDevice>& a = original.node(0).nics;
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].link_bits_per_second, 25'000'000'000u);
  EXPECT_EQ(a[1].link_bits_per_second, 200'000'000'000u);
  EXPECT_EQ(a[2].link_bits_per_second, 0u);  // absent: unknown
  EXPECT_EQ(original.node(1).nics[0].link_bits_per_second, 1'000'000'000'000'000u);  // the bound

  const std::string json = original.to_json();
  EXPECT_NE(
      json.find(
          R"("name": "mlx5_0", "kind": "openfabrics", "pci_bus_id": "", "numa_node": -1, "link_bits_per_second": 200000000000})"),
      std::string::npos)
      << json;
  EXPECT_NE(
      json.find(
          R"("name": "eth1", "kind": "ethernet", "pci_bus_id": "", "numa_node": -1, "link_bits_per_second": 0})"),
      std::string::npos)
      << json;
  const Topology again = Topology::parse(json, "round trip");
  EXPECT_EQ(again.to_json(), json);
  for (int n = 0; n < 2; ++n) {
    ASSERT_EQ(again.node(n).nics.size(), original.node(n).nics.size());
    for (std::size_t i = 0; i < original.node(n).nics.size(); ++i) {
      EXPECT_EQ(again.node(n).nics[i].link_bits_per_second,
                original.node(n).nics[i].link_bits_per_second)
          << "node " << n << " nic " << i;
    }
  }
  // People see the speeds too (collective_info prints describe()).
  const std::string text = again.describe();
  EXPECT_NE(
      text.find(
          "eth0 (ethernet, 25 Gb/s) mlx5_0 (openfabrics, 200 Gb/s) eth1 (ethernet, speed unknown)"),
      std::string::npos)
      << text;
}

TEST(TopologyFile, UnequalNodesFromRankLists) {
  const Topology topology = Topology::parse(
      R"({"nodes": [{"host": "a", "processing_units": 4, "ranks": [0, 2, 3]},
                    {"host": "b", "processing_units": 2, "cores": 2, "ranks": [1]}]})",
      "inline");
  EXPECT_EQ(topology.node_count(), 2);
  EXPECT_EQ(topology.min_ranks_per_node(), 1);
  EXPECT_EQ(topology.max_ranks_per_node(), 3);
  EXPECT_FALSE(topology.nodes_alike());
  EXPECT_EQ(topology.node_of(1), 1);
  EXPECT_EQ(topology.local_rank(3), 2);
  EXPECT_EQ(topology.placement(2).local_rank, 1);
}

TEST(TopologyFile, OversubscriptionIsSeen) {
  const Topology topology = Topology::parse("package:1 core:2 pu:1", "inline", 1, 4);
  EXPECT_TRUE(topology.oversubscribed());
}

std::string load_error(const std::string& text, int nodes = 0, int per_node = 0) {
  try {
    Topology::parse(text, "bad.json", nodes, per_node);
  } catch (const InvalidArgumentError& error) {
    return error.what();
  }
  return "";
}

// hwloc's time grows faster than the objects a synthetic description
// names: too large a machine is refused before hwloc sees it, whether its
// levels are typed ("core:N") or bare arities ("N", as hwloc also accepts),
// while attribute numbers such as size=32MB are not counted.
TEST(TopologyFile, OversizedSyntheticMachinesAreRefusedBeforeHwloc) {
  for (const char* text : {" 34086", "package:2 core:4096 pu:1", "2 2048 2", "core:16000000"}) {
    const std::string error = load_error(text, 1, 1);
    EXPECT_NE(error.find("more than 4096 processing units"), std::string::npos)
        << "\"" << text << "\": " << error;
  }
  // hwloc stops at a NUL: the bound must not stop earlier than hwloc does.
  const std::string nul_hidden("34086\0\0:\0", 9);
  const std::string error = load_error(nul_hidden, 1, 1);
  EXPECT_NE(error.find("NUL byte at offset 5"), std::string::npos) << error;
  const Topology fits =
      Topology::parse("package:2 l3:1(size=33554432) core:16 pu:2", "inline", 1, 1);
  EXPECT_EQ(fits.node(0).processing_units, 64);
  const Topology bare = Topology::parse("2 4 2", "inline", 1, 1);
  EXPECT_EQ(bare.node(0).processing_units, 16);
}

TEST(TopologyFile, RejectsMalformedDescriptions) {
  const char* bad[] = {
      R"({"nodes": []})",
      R"({"nodes": [{"processing_units": 0, "ranks": [0]}]})",
      R"({"nodes": [{"ranks": [0]}]})",                                     // no processing_units
      R"({"nodes": [{"processing_units": 2, "ranks": [1]}]})",              // rank 0 missing
      R"({"nodes": [{"processing_units": 2, "ranks": [0, 0]}]})",           // twice
      R"({"nodes": [{"processing_units": 2, "ranks": [0]}], "extra": 1})",  // unknown key
      R"({"nodes": [{"processing_units": 2, "ranks": [0]}], "version": 2})",
      R"({"format": "other", "nodes": [{"processing_units": 2, "ranks": [0]}]})",
      R"({"nodes": [{"processing_units": 2}], "placements": [{"rank": 0, "node": 1}]})",
      R"({"nodes": [{"processing_units": 2}], "placements": [{"rank": 1, "node": 0}]})",
      R"({"nodes": [{"processing_units": 2}, {"processing_units": 2}],
          "placements": [{"rank": 0, "node": 1, "local_rank": 1}]})",
      R"({"nodes": [{"processing_units": 2, "ranks": [1]}, {"processing_units": 2, "ranks": [0]}],
          "placements": [{"rank": 0, "node": 0}, {"rank": 1, "node": 1}]})",  // lists disagree
      R"({"nodes": [{"processing_units": 2, "gpus": [{"model": "x"}], "ranks": [0]}]})",
      // Link speeds: whole, non-negative, at most 1 Pb/s, spelled right.
      R"({"nodes": [{"processing_units": 2, "nics": [{"name": "e", "link_bits_per_second": -1}], "ranks": [0]}]})",
      R"({"nodes": [{"processing_units": 2, "nics": [{"name": "e", "link_bits_per_second": "10G"}], "ranks": [0]}]})",
      R"({"nodes": [{"processing_units": 2, "nics": [{"name": "e", "link_bits_per_second": 1.5e9}], "ranks": [0]}]})",
      R"({"nodes": [{"processing_units": 2, "nics": [{"name": "e", "link_bits_per_second": 1000000000000001}], "ranks": [0]}]})",
      R"({"nodes": [{"processing_units": 2, "nics": [{"name": "e", "link_bits_per_second": null}], "ranks": [0]}]})",
      R"({"nodes": [{"processing_units": 2, "nics": [{"name": "e", "link_bit_per_second": 1000}], "ranks": [0]}]})",
      R"({"nodes": [{"processing_units": 2, "link_bits_per_second": 1000, "ranks": [0]}]})",
      "<topology>not hwloc</topology>",
      "package:banana",
      "two\nlines",
  };
  for (const char* text : bad) {
    const std::string error = load_error(text);
    EXPECT_NE(error, "") << "accepted: " << text;
    EXPECT_NE(error.find("bad.json"), std::string::npos) << error;
  }
  const std::string speed_error = load_error(
      R"({"nodes": [{"processing_units": 2, "nics": [{"name": "e", "link_bits_per_second": -1}], "ranks": [0]}]})");
  EXPECT_NE(speed_error.find("nodes[0].nics[0]"), std::string::npos) << speed_error;
  EXPECT_NE(speed_error.find("\"link_bits_per_second\""), std::string::npos) << speed_error;
  // A machine description places no ranks by itself.
  EXPECT_NE(load_error("package:1 core:2 pu:1").find("places no ranks"), std::string::npos);
  EXPECT_NE(load_error("package:1 core:2 pu:1", 2, 0), "");
  EXPECT_THROW(Topology::load(fixture("does_not_exist.json")), InvalidArgumentError);
}

}  // namespace
}  // namespace collective
