// AUTO on machines we do not have: the fixtures loaded into detached
// communicator states, the cost model's choices, the rules file and its
// errors, and forced algorithms that cannot serve a call.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>

#include "algorithms/registry.h"
#include "collective/errors.h"
#include "collective/topology.h"
#include "core/communicator_state.h"
#include "core/request.h"
#include "selection/cost_model.h"
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
  const auto ring = model_seconds(Algorithm::kRing, all_reduce(16 * MiB), state->topology.operator*());
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

TEST(Selection, OtherCollectivesKeepTheSizeRule) {
  const auto state = detached(Topology::load(fixture("laptop.synthetic"), 1, 4));
  Request request = all_reduce(MiB);
  request.kind = CollectiveKind::kAllGather;
  EXPECT_EQ(chosen(request, *state), Algorithm::kRing);
  request.kind = CollectiveKind::kBarrier;
  request.count = 0;
  EXPECT_EQ(chosen(request, *state), Algorithm::kRecursiveDoubling);
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
  EXPECT_EQ(rules.rules[1].max_bytes, UINT64_MAX);
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
      R"({"rules": []})",                                   // version missing
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
