// Processors a node's ranks may use: the union of their bindings
// (topology/cpu_list.h), and what Topology makes of it.
#include "topology/cpu_list.h"

#include <gtest/gtest.h>

#include "collective/topology.h"

namespace collective::internal {
namespace {

std::int64_t union_of(std::initializer_list<const char*> lists) {
  CpuListUnion all;
  for (const char* list : lists) EXPECT_TRUE(all.add(list)) << list;
  return all.count();
}

TEST(CpuListUnion, CountsEachProcessorOnce) {
  EXPECT_EQ(union_of({"0"}), 1);
  EXPECT_EQ(union_of({"0", "0"}), 1);
  EXPECT_EQ(union_of({"0", "1"}), 2);
  EXPECT_EQ(union_of({"0-3,8", "2-5", "8"}), 7);
  EXPECT_EQ(union_of({"10-11", "0-1"}), 4);
  EXPECT_EQ(union_of({"0-1023"}), 1024);
  EXPECT_EQ(union_of({"5-9", "0-3", "4"}), 10);
}

TEST(CpuListUnion, RefusesWhatIsNotACpuList) {
  for (const char* bad :
       {"", "a", "1-", "-1", "3-1", "0,", ",0", "0,,1", "0x1", "0 1", "99999999999999999"}) {
    CpuListUnion all;
    EXPECT_FALSE(all.add(bad)) << "\"" << bad << "\"";
    EXPECT_EQ(all.count(), 0) << "\"" << bad << "\"";
  }
}

// A node of 16 processing units with 4 ranks.
Topology four_ranks(std::initializer_list<const char*> cpusets) {
  Node node;
  node.host = "n";
  node.packages = 1;
  node.numa_nodes = 1;
  node.cores = 16;
  node.processing_units = 16;
  node.ranks = {0, 1, 2, 3};
  node.source = "test";
  std::vector<RankPlacement> placements;
  int rank = 0;
  for (const char* cpuset : cpusets) {
    RankPlacement place;
    place.local_rank = rank++;
    place.cpuset = cpuset;
    placements.push_back(place);
  }
  return Topology::from_parts({node}, placements);
}

TEST(UsableProcessingUnits, AreTheUnionOfTheRanksBindings) {
  const Topology two = four_ranks({"0", "1", "0-1", "1"});
  EXPECT_EQ(two.usable_processing_units(0), 2);
  EXPECT_TRUE(two.oversubscribed());
  const Topology own = four_ranks({"0", "1", "2", "3"});
  EXPECT_EQ(own.usable_processing_units(0), 4);
  EXPECT_FALSE(own.oversubscribed());
}

TEST(UsableProcessingUnits, AreTheWholeNodeWhenARankIsUnboundOrUnreadable) {
  EXPECT_EQ(four_ranks({"0", "", "0", "0"}).usable_processing_units(0), 16);
  EXPECT_FALSE(four_ranks({"0", "", "0", "0"}).oversubscribed());
  EXPECT_EQ(four_ranks({"0", "zero", "0", "0"}).usable_processing_units(0), 16);
  // Bindings naming more processors than the node has count as the node.
  EXPECT_EQ(four_ranks({"0-63", "0", "0", "0"}).usable_processing_units(0), 16);
}

}  // namespace
}  // namespace collective::internal
