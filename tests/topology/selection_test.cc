// AUTO on machines we do not have: the fixtures loaded into detached
// communicator states, the cost model's choices, the rules file and its
// errors, and forced algorithms that cannot serve a call.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <random>
#include <string>

#include "algorithms/registry.h"
#include "collective/errors.h"
#include "collective/topology.h"
#include "core/communicator_state.h"
#include "core/request.h"
#include "cost/cost_model.h"
#include "selection/rules_file.h"
#include "selection/selector.h"

namespace collective::internal {
namespace {

std::string fixture(const char* name) { return std::string(COLLECTIVE_FIXTURES_DIR) + "/" + name; }

std::unique_ptr<CommunicatorState> detached(const Topology& topology) {
  return std::make_unique<CommunicatorState>(std::make_shared<const Topology>(topology), 0);
}

Request all_reduce(std::size_t bytes, DataType type = DataType::kFloat32,
                   MemoryKind memory = MemoryKind::kHost) {
  Request request;
  request.kind = CollectiveKind::kAllReduce;
  request.type = type;
  request.count = bytes / element_size(type);
  request.memory = memory;
  return request;
}

Algorithm chosen(const Request& request, const CommunicatorState& state,
                 const RuleSet* rules = nullptr) {
  return select_algorithm_with_rules(request, state, rules, true).algorithm->id();
}

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * 1024;
constexpr std::size_t GiB = 1024 * MiB;

TEST(Selection, OneNodePicksSharedMemoryAtEverySize) {
  for (const int ranks : {2, 3, 4, 8}) {
    const auto state = detached(Topology::load(fixture("laptop.synthetic"), 1, ranks));
    for (std::size_t bytes = 8; bytes <= GiB; bytes *= 2) {
      EXPECT_EQ(chosen(all_reduce(bytes), *state), Algorithm::kSharedMemory)
          << ranks << " ranks, " << bytes << " B";
    }
  }
}

TEST(Selection, OversubscribedNodeStillPicksSharedMemory) {
  const auto state = detached(Topology::parse("package:1 core:2 pu:1", "two cores", 1, 4));
  for (std::size_t bytes = 8; bytes <= GiB; bytes *= 4) {
    EXPECT_EQ(chosen(all_reduce(bytes), *state), Algorithm::kSharedMemory) << bytes;
  }
}

// The development VM (two_core_vm.synthetic: 2 cores, 32 MiB L3) with 4 and
// 8 ranks. The ring's MPI copies are CPU work that ranks beyond the cores
// take turns at; before the model stretched them, AUTO picked the ring from
// 4 MiB at 8 ranks, which measured 1.9x slower than shared_memory at 64 MiB.
TEST(Selection, RanksBeyondTheCoresPickSharedMemoryAtEverySize) {
  for (const int ranks : {4, 8}) {
    const auto state = detached(Topology::load(fixture("two_core_vm.synthetic"), 1, ranks));
    ASSERT_TRUE(state->topology->oversubscribed()) << ranks << " ranks";
    for (std::size_t bytes = 8; bytes <= GiB; bytes *= 2) {
      EXPECT_EQ(chosen(all_reduce(bytes), *state), Algorithm::kSharedMemory)
          << ranks << " ranks, " << bytes << " B";
    }
  }
  // The case that regressed, by name: 8 ranks, 64 MiB, and the ring's
  // estimate above shared_memory's by the measured margin (about 2x).
  const auto eight = detached(Topology::load(fixture("two_core_vm.synthetic"), 1, 8));
  const Request big = all_reduce(64 * MiB);
  const double ring = *model_seconds(Algorithm::kRing, big, *eight->topology);
  const double shm = *model_seconds(Algorithm::kSharedMemory, big, *eight->topology);
  EXPECT_GT(ring, 1.5 * shm) << "ring " << ring << " s, shared_memory " << shm << " s";
}

TEST(Selection, ClusterPicksHierarchicalForLargeMessages) {
  const auto state = detached(Topology::load(fixture("four_node_cluster.json")));
  EXPECT_EQ(chosen(all_reduce(16 * MiB), *state), Algorithm::kHierarchical);
  EXPECT_EQ(chosen(all_reduce(GiB), *state), Algorithm::kHierarchical);
  // Shared memory cannot span nodes.
  const auto* shm = find_algorithm(Algorithm::kSharedMemory);
  const Support support = shm->supports(all_reduce(64), *state);
  EXPECT_FALSE(support.ok);
  EXPECT_NE(support.reason.find("4 nodes"), std::string::npos) << support.reason;
}

TEST(Selection, TwoHostsOverEthernetPickHierarchicalFrom16MiB) {
  // The netns CI shape: 2 hosts x 2 ranks, Ethernet only.
  const auto state = detached(Topology::parse(
      R"({"nodes": [{"host": "h1", "processing_units": 2, "nics": [{"name": "veth0", "kind": "ethernet"}], "ranks": [0, 1]},
                    {"host": "h2", "processing_units": 2, "nics": [{"name": "veth1", "kind": "ethernet"}], "ranks": [2, 3]}]})",
      "netns"));
  for (std::size_t bytes = 16 * MiB; bytes <= GiB; bytes *= 2) {
    EXPECT_EQ(chosen(all_reduce(bytes), *state), Algorithm::kHierarchical) << bytes;
  }
  const auto ring =
      model_seconds(Algorithm::kRing, all_reduce(16 * MiB), state->topology.operator*());
  const auto hierarchical =
      model_seconds(Algorithm::kHierarchical, all_reduce(16 * MiB), *state->topology);
  ASSERT_TRUE(ring && hierarchical);
  EXPECT_LT(*hierarchical, *ring);
}

TEST(Selection, EightGpuNodeDeviceBuffersNeedNccl) {
  const auto state = detached(Topology::load(fixture("eight_gpu_node.xml"), 1, 8));
  const Request request = all_reduce(MiB, DataType::kFloat16, MemoryKind::kDevice);
  if (find_algorithm(Algorithm::kNccl) != nullptr) {
    EXPECT_EQ(chosen(request, *state), Algorithm::kNccl);
  } else {
    try {
      chosen(request, *state);
      FAIL() << "device buffers accepted without NCCL";
    } catch (const UnsupportedError& error) {
      EXPECT_NE(std::string(error.what()).find("device"), std::string::npos) << error.what();
    }
  }
  // Host buffers on the same node: shared memory.
  EXPECT_EQ(chosen(all_reduce(MiB), *state), Algorithm::kSharedMemory);
}

TEST(Selection, BarrierKeepsTheSizeRule) {
  const auto state = detached(Topology::load(fixture("laptop.synthetic"), 1, 4));
  Request request = all_reduce(MiB);
  request.kind = CollectiveKind::kBarrier;
  request.count = 0;
  EXPECT_EQ(chosen(request, *state), Algorithm::kRecursiveDoubling);
}

// all_gather, broadcast, reduce_scatter and reduce on one node:
// shared_memory by its estimate at every size (the box, the slots'
// rounds, the single copy), not the ring.
TEST(Selection, RingCollectivesOnOneNodeTakeSharedMemory) {
  const auto state = detached(Topology::load(fixture("laptop.synthetic"), 1, 4));
  for (const CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kBroadcast,
                                    CollectiveKind::kReduceScatter, CollectiveKind::kReduce}) {
    for (const std::size_t bytes : {std::size_t{8}, std::size_t{8} << 10, MiB}) {
      Request request = all_reduce(bytes);
      request.kind = kind;
      EXPECT_EQ(chosen(request, *state), Algorithm::kSharedMemory)
          << to_string(kind) << " of " << bytes << " bytes";
    }
  }
}

TEST(Selection, ForcedAlgorithmThatCannotServeIsAnError) {
  const auto state = detached(Topology::load(fixture("four_node_cluster.json")));
  Request request = all_reduce(MiB);
  request.requested = Algorithm::kSharedMemory;
  request.forced = true;
  EXPECT_THROW(chosen(request, *state), UnsupportedError);
  request.requested = Algorithm::kHierarchical;
  EXPECT_EQ(chosen(request, *state), Algorithm::kHierarchical);
  request.kind = CollectiveKind::kBroadcast;
  EXPECT_THROW(chosen(request, *state), UnsupportedError);
}

TEST(Selection, ExplainsWithEstimates) {
  const auto state = detached(Topology::load(fixture("laptop.synthetic"), 1, 2));
  const Selection selection = select_algorithm_with_rules(all_reduce(MiB), *state, nullptr, true);
  EXPECT_NE(selection.reason.find("cost model"), std::string::npos) << selection.reason;
  EXPECT_NE(selection.reason.find("ring"), std::string::npos) << selection.reason;
  EXPECT_NE(selection.reason.find("1 node x 2 ranks"), std::string::npos) << selection.reason;
}

TEST(Selection, EveryEstimateIsPositiveAndGrowsWithSize) {
  const Topology topologies[] = {Topology::load(fixture("laptop.synthetic"), 1, 4),
                                 Topology::load(fixture("four_node_cluster.json")),
                                 Topology::parse("package:1 core:2 pu:1", "small", 2, 3)};
  for (const Topology& topology : topologies) {
    for (const Algorithm algorithm : {Algorithm::kSharedMemory, Algorithm::kHierarchical,
                                      Algorithm::kRing, Algorithm::kRecursiveDoubling}) {
      double previous = 0.0;
      for (std::size_t bytes = 8; bytes <= GiB; bytes *= 2) {
        const auto seconds = model_seconds(algorithm, all_reduce(bytes), topology);
        if (!seconds) continue;
        EXPECT_GT(*seconds, 0.0);
        EXPECT_GE(*seconds, previous) << to_string(algorithm) << " " << bytes;
        previous = *seconds;
      }
    }
  }
}

// ---- network bandwidth from NIC link speeds ---------------------------------

// 4 nodes x 4 ranks; node i's NICs are `nics[i]` (JSON array text).
Topology four_nodes(const std::array<std::string, 4>& nics) {
  std::string text = R"({"nodes": [)";
  for (int i = 0; i < 4; ++i) {
    text += std::string(i == 0 ? "" : ", ") + R"({"host": "n)" + std::to_string(i) +
            R"(", "processing_units": 16, "l3_cache_bytes": 33554432, "nics": )" +
            nics[static_cast<std::size_t>(i)] + R"(, "ranks": [)";
    for (int r = 0; r < 4; ++r) text += (r == 0 ? "" : ", ") + std::to_string(4 * i + r);
    text += "]}";
  }
  return Topology::parse(text + "]}", "four_nodes");
}

Topology four_alike(const std::string& nic) { return four_nodes({nic, nic, nic, nic}); }

std::string eth0(const char* bits_per_second) {
  return std::string(R"([{"name": "eth0", "kind": "ethernet", "link_bits_per_second": )") +
         bits_per_second + "}]";
}

Request all_to_all(std::size_t block_bytes) {
  Request request;
  request.kind = CollectiveKind::kAllToAll;
  request.type = DataType::kInt8;
  request.count = block_bytes;
  return request;
}

// all_to_all across nodes: Bruck's ceil(log2 p) rounds beat pairwise's p-1
// messages for small blocks once p is large enough, pairwise (each byte
// sent once) wins for large ones; at 2 hosts x 2 ranks pairwise's 3
// messages go out at once and it wins at every size. Every estimate grows
// with the block.
TEST(Selection, AllToAllPicksBruckForSmallBlocksAndPairwiseForLargeOnes) {
  const Topology sixteen = four_alike(eth0("10000000000"));
  const auto many = detached(sixteen);
  EXPECT_EQ(chosen(all_to_all(8), *many), Algorithm::kBruck);
  EXPECT_EQ(chosen(all_to_all(64), *many), Algorithm::kBruck);
  EXPECT_EQ(chosen(all_to_all(MiB), *many), Algorithm::kPairwise);
  EXPECT_EQ(chosen(all_to_all(64 * MiB), *many), Algorithm::kPairwise);
  const auto netns = detached(Topology::parse(
      R"({"nodes": [{"host": "h1", "processing_units": 2, "nics": [{"name": "veth0", "kind": "ethernet"}], "ranks": [0, 1]},
                    {"host": "h2", "processing_units": 2, "nics": [{"name": "veth1", "kind": "ethernet"}], "ranks": [2, 3]}]})",
      "netns"));
  for (std::size_t bytes = 1; bytes <= 64 * MiB; bytes *= 4) {
    EXPECT_EQ(chosen(all_to_all(bytes), *netns), Algorithm::kPairwise) << bytes;
  }
  for (const Topology* topology : {&sixteen, netns->topology.get()}) {
    for (const Algorithm algorithm : {Algorithm::kPairwise, Algorithm::kBruck}) {
      double previous = 0.0;
      for (std::size_t bytes = 1; bytes <= GiB; bytes *= 2) {
        const auto seconds = model_seconds(algorithm, all_to_all(bytes), *topology);
        ASSERT_TRUE(seconds) << to_string(algorithm);
        EXPECT_GT(*seconds, previous) << to_string(algorithm) << " " << bytes;
        previous = *seconds;
      }
    }
  }
  // all_to_all_v: pairwise alone, whatever this rank's counts.
  Request v;
  v.kind = CollectiveKind::kAllToAllV;
  v.type = DataType::kInt8;
  EXPECT_EQ(chosen(v, *many), Algorithm::kPairwise);
  EXPECT_EQ(chosen(v, *netns), Algorithm::kPairwise);
}

TEST(CostModel, NetworkBandwidthComesFromTheLinkSpeed) {
  const Topology slow = four_alike(eth0("1000000000"));    // 1 Gb/s
  const Topology ten = four_alike(eth0("10000000000"));    // 10 Gb/s, the assumed speed
  const Topology fast = four_alike(eth0("100000000000"));  // 100 Gb/s
  const Topology unknown = four_alike(R"([{"name": "eth0", "kind": "ethernet"}])");

  EXPECT_EQ(link_cost(LinkKind::kNetwork, slow).bytes_per_second, 125e6);
  EXPECT_EQ(link_cost(LinkKind::kNetwork, ten).bytes_per_second, 1.25e9);
  EXPECT_EQ(link_cost(LinkKind::kNetwork, fast).bytes_per_second, 12.5e9);
  // Latency stays the assumed constant whatever the speed.
  for (const Topology* topology : {&slow, &ten, &fast, &unknown}) {
    EXPECT_EQ(link_cost(LinkKind::kNetwork, *topology).latency_seconds, 25e-6);
  }
  const NetworkModel measured = network_model(slow);
  EXPECT_STREQ(measured.kind, "ethernet");
  EXPECT_EQ(measured.link_bits_per_second, 1'000'000'000u);
  EXPECT_EQ(measured.node_without_speed, -1);

  // Unknown speeds: the assumed 10 Gb/s, so every estimate equals the 10 Gb/s one.
  const NetworkModel assumed = network_model(unknown);
  EXPECT_EQ(assumed.link_bits_per_second, 0u);
  EXPECT_EQ(assumed.node_without_speed, 0);
  EXPECT_EQ(assumed.cost.bytes_per_second, 1.25e9);
  for (const Algorithm algorithm :
       {Algorithm::kHierarchical, Algorithm::kRing, Algorithm::kRecursiveDoubling}) {
    for (std::size_t bytes = 8; bytes <= GiB; bytes *= 8) {
      const auto guessed = model_seconds(algorithm, all_reduce(bytes), unknown);
      const auto at_ten = model_seconds(algorithm, all_reduce(bytes), ten);
      ASSERT_TRUE(guessed && at_ten);
      EXPECT_EQ(*guessed, *at_ten) << to_string(algorithm) << " " << bytes;
    }
  }

  // Cross-node estimates follow the speed...
  for (const Algorithm algorithm :
       {Algorithm::kHierarchical, Algorithm::kRing, Algorithm::kRecursiveDoubling}) {
    const auto at_slow = model_seconds(algorithm, all_reduce(16 * MiB), slow);
    const auto at_ten = model_seconds(algorithm, all_reduce(16 * MiB), ten);
    const auto at_fast = model_seconds(algorithm, all_reduce(16 * MiB), fast);
    ASSERT_TRUE(at_slow && at_ten && at_fast);
    EXPECT_GT(*at_slow, *at_ten) << to_string(algorithm);
    EXPECT_GT(*at_ten, *at_fast) << to_string(algorithm);
  }
  // ...and so do the choices: at 16 KiB the slow links make moving fewer
  // bytes between nodes (hierarchical) worth its extra steps; the fast ones
  // do not.
  EXPECT_EQ(chosen(all_reduce(16 * KiB), *detached(slow)), Algorithm::kHierarchical);
  EXPECT_EQ(chosen(all_reduce(16 * KiB), *detached(ten)), Algorithm::kHierarchical);
  EXPECT_EQ(chosen(all_reduce(16 * KiB), *detached(unknown)), Algorithm::kHierarchical);
  EXPECT_EQ(chosen(all_reduce(16 * KiB), *detached(fast)), Algorithm::kRecursiveDoubling);
}

TEST(CostModel, SlowestNodesBestUsableNicDecides) {
  // Per node the fastest Ethernet/IPoIB link (25, 40, 100, 50 Gb/s); the
  // OpenFabrics device on two nodes only is not used, whatever its rate.
  const Topology mixed =
      four_nodes({R"([{"name": "eth0", "kind": "ethernet", "link_bits_per_second": 1000000000},
           {"name": "eth1", "kind": "ethernet", "link_bits_per_second": 25000000000}])",
                  eth0("40000000000"),
                  R"([{"name": "eth0", "kind": "ethernet"},
           {"name": "ib0", "kind": "ipoib", "link_bits_per_second": 100000000000},
           {"name": "mlx5_0", "kind": "openfabrics", "link_bits_per_second": 400000000000}])",
                  R"([{"name": "eth0", "kind": "ethernet", "link_bits_per_second": 50000000000},
           {"name": "mlx5_0", "kind": "openfabrics", "link_bits_per_second": 400000000000}])"});
  const NetworkModel model = network_model(mixed);
  EXPECT_STREQ(model.kind, "ethernet");
  EXPECT_EQ(model.link_bits_per_second, 25'000'000'000u);
  EXPECT_EQ(model.cost.bytes_per_second, 3.125e9);
  EXPECT_EQ(model.cost.latency_seconds, 25e-6);

  // One node without a usable speed (its only NIC unknown, or an
  // OpenFabrics device TCP does not use, or none): the assumption.
  for (const char* without :
       {R"([{"name": "eth0", "kind": "ethernet"}])",
        R"([{"name": "mlx5_0", "kind": "openfabrics", "link_bits_per_second": 100000000000}])",
        "[]"}) {
    const Topology partial =
        four_nodes({eth0("25000000000"), eth0("25000000000"), without, eth0("25000000000")});
    const NetworkModel fallback = network_model(partial);
    EXPECT_EQ(fallback.link_bits_per_second, 0u) << without;
    EXPECT_EQ(fallback.node_without_speed, 2) << without;
    EXPECT_EQ(fallback.cost.bytes_per_second, 1.25e9) << without;
  }
}

TEST(CostModel, FabricBandwidthComesFromPortRates) {
  auto hca = [](const char* bits_per_second) {
    return std::string(
               R"([{"name": "eth0", "kind": "ethernet", "link_bits_per_second": 400000000000},)") +
           R"({"name": "mlx5_0", "kind": "openfabrics", "link_bits_per_second": )" +
           bits_per_second + "}]";
  };
  // The slowest node's port (100 Gb/s), not the faster Ethernet.
  const NetworkModel hundred = network_model(four_nodes(
      {hca("200000000000"), hca("200000000000"), hca("100000000000"), hca("200000000000")}));
  EXPECT_STREQ(hundred.kind, "openfabrics");
  EXPECT_EQ(hundred.link_bits_per_second, 100'000'000'000u);
  EXPECT_EQ(hundred.cost.bytes_per_second, 12.5e9);
  EXPECT_EQ(hundred.cost.latency_seconds, 3e-6);
  const NetworkModel hdr = network_model(four_alike(hca("200000000000")));
  EXPECT_EQ(hdr.cost.bytes_per_second, 25e9);
  // A port rate unknown on one node: the assumed fabric bandwidth (the
  // Ethernet speed does not stand in for it).
  const NetworkModel assumed = network_model(
      four_nodes({hca("200000000000"), hca("0"), hca("200000000000"), hca("200000000000")}));
  EXPECT_STREQ(assumed.kind, "openfabrics");
  EXPECT_EQ(assumed.link_bits_per_second, 0u);
  EXPECT_EQ(assumed.node_without_speed, 1);
  EXPECT_EQ(assumed.cost.bytes_per_second, 12.5e9);
  // The cluster fixture's HCAs report 100 Gb/s.
  const NetworkModel cluster = network_model(Topology::load(fixture("four_node_cluster.json")));
  EXPECT_STREQ(cluster.kind, "openfabrics");
  EXPECT_EQ(cluster.link_bits_per_second, 100'000'000'000u);
}

TEST(CostModel, ReasonSaysWhetherBandwidthWasMeasured) {
  const Topology slow = four_alike(eth0("1000000000"));
  const Topology unknown = four_alike(R"([{"name": "eth0", "kind": "ethernet"}])");
  EXPECT_EQ(describe_network(slow),
            "network ethernet 0.125 GB/s measured from the link (slowest node's best: 1 Gb/s), "
            "latency 25 us assumed");
  EXPECT_EQ(describe_network(unknown),
            "network ethernet 1.25 GB/s assumed (node 0 (n0) reports no ethernet or ipoib link "
            "speed), latency 25 us assumed");
  const Selection measured =
      select_algorithm_with_rules(all_reduce(MiB), *detached(slow), nullptr, true);
  EXPECT_NE(measured.reason.find("4 nodes x 4 ranks, 1048576 B, " + describe_network(slow) + ": "),
            std::string::npos)
      << measured.reason;
  const Selection assumed =
      select_algorithm_with_rules(all_reduce(MiB), *detached(unknown), nullptr, true);
  EXPECT_NE(assumed.reason.find(describe_network(unknown)), std::string::npos) << assumed.reason;
  // One node: no network in the reason.
  const Selection local = select_algorithm_with_rules(
      all_reduce(MiB), *detached(Topology::load(fixture("laptop.synthetic"), 1, 2)), nullptr, true);
  EXPECT_EQ(local.reason.find("network"), std::string::npos) << local.reason;
}

// ---- rules file -----------------------------------------------------------

TEST(Rules, ParsesTheAgreedFormat) {
  const RuleSet rules = parse_rules(R"({"version": 1, "rules": [
      {"collective": "all_reduce", "nodes": 1, "ranks_per_node": 2, "min_bytes": 0,
       "max_bytes": 65536, "algorithm": "recursive_doubling"},
      {"collective": "all_reduce", "min_bytes": 65537, "algorithm": "ring"},
      {"collective": "barrier", "algorithm": "mpi"}]})",
                                    "rules.json");
  ASSERT_EQ(rules.rules.size(), 3u);
  EXPECT_EQ(rules.rules[0].nodes, 1);
  EXPECT_EQ(rules.rules[0].ranks_per_node, 2);
  EXPECT_EQ(rules.rules[0].max_bytes, 65536u);
  EXPECT_FALSE(rules.rules[1].nodes.has_value());
  EXPECT_EQ(rules.rules[1].max_bytes, kUnboundedBytes);
  EXPECT_EQ(rules.rules[2].collective, CollectiveKind::kBarrier);
  EXPECT_EQ(rules.rules[2].algorithm, Algorithm::kMpi);
}

TEST(Rules, FirstMatchWinsWithInclusiveRanges) {
  const RuleSet rules = parse_rules(R"({"version": 1, "rules": [
      {"collective": "all_reduce", "nodes": 1, "ranks_per_node": 2, "max_bytes": 1024, "algorithm": "recursive_doubling"},
      {"collective": "all_reduce", "nodes": 1, "min_bytes": 1024, "max_bytes": 4096, "algorithm": "ring"},
      {"collective": "all_reduce", "min_bytes": 8192, "max_bytes": 8192, "algorithm": "auto"},
      {"collective": "all_reduce", "algorithm": "mpi"}]})",
                                    "rules.json");
  const auto two = detached(Topology::load(fixture("laptop.synthetic"), 1, 2));
  const auto four = detached(Topology::load(fixture("laptop.synthetic"), 1, 4));
  EXPECT_EQ(chosen(all_reduce(8), *two, &rules), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(chosen(all_reduce(1024), *two, &rules), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(chosen(all_reduce(1024), *four, &rules), Algorithm::kRing);  // ranks_per_node differs
  EXPECT_EQ(chosen(all_reduce(4096), *two, &rules), Algorithm::kRing);
  EXPECT_EQ(chosen(all_reduce(4100), *two, &rules), Algorithm::kMpi);
  EXPECT_EQ(chosen(all_reduce(8192), *two, &rules), Algorithm::kSharedMemory);  // auto: the model
  const Selection selection = select_algorithm_with_rules(all_reduce(8), *two, &rules, true);
  EXPECT_NE(selection.reason.find("rules.json rule 0"), std::string::npos) << selection.reason;
}

TEST(Rules, RuleThatCannotServeFallsThrough) {
  const RuleSet rules = parse_rules(R"({"version": 1, "rules": [
      {"collective": "all_reduce", "algorithm": "shared_memory"},
      {"collective": "all_reduce", "algorithm": "ring"}]})",
                                    "fallthrough.json");
  const auto cluster = detached(Topology::load(fixture("four_node_cluster.json")));
  EXPECT_EQ(chosen(all_reduce(64), *cluster, &rules), Algorithm::kRing);
  // Forcing beats any rule.
  Request forced = all_reduce(64);
  forced.requested = Algorithm::kRecursiveDoubling;
  forced.forced = true;
  EXPECT_EQ(chosen(forced, *cluster, &rules), Algorithm::kRecursiveDoubling);
}

std::string rules_error(const std::string& text) {
  try {
    parse_rules(text, "bad_rules.json");
  } catch (const InvalidArgumentError& error) {
    return error.what();
  }
  return "";
}

TEST(Rules, RejectsMalformedFilesNamingRuleAndField) {
  const char* bad[] = {
      "",
      "[]",
      R"({"rules": []})",  // version missing
      R"({"version": 2, "rules": []})",
      R"({"version": 1})",
      R"({"version": 1, "rules": {}})",
      R"({"version": 1, "rules": [], "extra": true})",
      R"({"version": 1, "rules": [{"algorithm": "ring"}]})",
      R"({"version": 1, "rules": [{"collective": "all_reduce"}]})",
      R"({"version": 1, "rules": [{"collective": "allreduce", "algorithm": "ring"}]})",
      R"({"version": 1, "rules": [{"collective": "all_reduce", "algorithm": "fast"}]})",
      R"({"version": 1, "rules": [{"collective": "all_reduce", "algorithm": "ring", "nodes": 0}]})",
      R"({"version": 1, "rules": [{"collective": "all_reduce", "algorithm": "ring", "min_bytes": -1}]})",
      R"({"version": 1, "rules": [{"collective": "all_reduce", "algorithm": "ring", "min_bytes": 10, "max_bytes": 9}]})",
      R"({"version": 1, "rules": [{"collective": "all_reduce", "algorithm": "ring", "max_bytes": 1.5}]})",
      R"({"version": 1, "rules": [{"collective": "all_reduce", "algorithm": "ring", "max_byte": 10}]})",
      R"({"version": 1, "rules": [{"collective": "all_reduce", "algorithm": "ring", "max_bytes": "10"}]})",
      R"({"version": 1, "rules": [{"collective": "all_reduce", "algorithm": "ring", "max_bytes": 99999999999999999999}]})",
  };
  for (const char* text : bad) {
    const std::string error = rules_error(text);
    EXPECT_NE(error, "") << "accepted: " << text;
    EXPECT_NE(error.find("bad_rules.json"), std::string::npos) << error;
  }
  const std::string error = rules_error(
      R"({"version": 1, "rules": [{"collective": "all_reduce", "algorithm": "ring"},
                                   {"collective": "all_reduce", "algorithm": "ring", "colour": 1}]})");
  EXPECT_NE(error.find("rule 1"), std::string::npos) << error;
  EXPECT_NE(error.find("\"colour\""), std::string::npos) << error;
}

// The readers above the JSON parser (rules, topology dump) on random edits
// of valid documents: a value or an InvalidArgumentError, never a crash.
TEST(Rules, ReadersSurviveRandomMutations) {
  const std::string rules = R"({"version": 1, "rules": [{"collective": "all_reduce", "nodes": 1,
      "ranks_per_node": 2, "min_bytes": 0, "max_bytes": 65536, "algorithm": "recursive_doubling"},
      {"collective": "barrier", "algorithm": "mpi"}]})";
  const std::string dump = Topology::load(fixture("four_node_cluster.json")).to_json();
  const char alphabet[] = "{}[]\",:0123456789-e.abcdefghijklmnopqrstuvwxyz_ \n";
  std::mt19937 random(2024);
  int accepted = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const bool is_rules = trial % 2 == 0;
    std::string text = is_rules ? rules : dump;
    const int edits = 1 + static_cast<int>(random() % 3);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = 1 + random() % (text.size() - 1);  // keep the leading '{'
      switch (random() % 3) {
        case 0: text.erase(at, 1 + random() % 4); break;
        case 1: text.insert(at, 1, alphabet[random() % (sizeof(alphabet) - 1)]); break;
        default: text[at] = alphabet[random() % (sizeof(alphabet) - 1)]; break;
      }
    }
    try {
      if (is_rules) {
        parse_rules(text, "mutant");
      } else {
        Topology::parse(text, "mutant");
      }
      ++accepted;
    } catch (const InvalidArgumentError&) {
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_THROW(Topology::parse("package:1 core:4096 pu:4096", "huge", 1, 1), InvalidArgumentError);
}

}  // namespace
}  // namespace collective::internal
