// The live topology under mpirun (1-4 ranks): what the ranks see, that they
// all see the same, communicators made by split, the dump, a topology file
// that splits or replaces nodes, and bad files failing on every rank.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "virtual_nodes.h"

namespace collective {
namespace {

bool all_ranks_agree(bool ok) {
  int value = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return value == 1;
}

// The same text on every rank?
bool same_everywhere(const std::string& text) {
  std::string root = text;
  int length = static_cast<int>(root.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  root.resize(static_cast<std::size_t>(length));
  MPI_Bcast(root.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  return all_ranks_agree(root == text);
}

// The processors the ranks (all on one node) may run on together, from the
// OS's affinity masks rather than hwloc: the oracle of oversubscription.
int processors_the_ranks_may_use() {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  EXPECT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  std::vector<unsigned char> bits(CPU_SETSIZE);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) bits[cpu] = CPU_ISSET(cpu, &mine) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, bits.data(), CPU_SETSIZE, MPI_UNSIGNED_CHAR, MPI_MAX, MPI_COMM_WORLD);
  int count = 0;
  for (unsigned char bit : bits) count += bit;
  return count;
}

std::string temp_path(const char* stem) {
  return "/tmp/collective-" + std::string(stem) + "-" + std::to_string(getpid());
}

TEST(Topology, WorldIsOneNodeSeenAlikeByEveryRank) {
  Communicator world = Communicator::world();
  const Topology& topology = world.topology();
  EXPECT_EQ(topology.size(), world.size());
  EXPECT_EQ(topology.node_count(), 1);
  EXPECT_EQ(topology.node_of(world.rank()), 0);
  EXPECT_EQ(topology.local_rank(world.rank()), world.rank());
  const Node& node = topology.node(0);
  EXPECT_EQ(node.source, "hwloc");
  EXPECT_GE(node.processing_units, 1);
  EXPECT_GE(node.cores, 1);
  EXPECT_GE(node.packages, 1);
  EXPECT_EQ(static_cast<int>(node.ranks.size()), world.size());
  // Ranks confined to fewer processors than the node has (taskset, the
  // launcher's binding) time-share what they are given.
  const int usable = processors_the_ranks_may_use();
  EXPECT_EQ(topology.usable_processing_units(0), std::min(usable, node.processing_units));
  EXPECT_EQ(topology.oversubscribed(), world.size() > std::min(usable, node.processing_units))
      << "ranks may use " << usable << " of " << node.processing_units << " processors";
  EXPECT_TRUE(same_everywhere(topology.to_json()));
  // The dump parses back to the same value.
  EXPECT_EQ(Topology::parse(topology.to_json(), "dump").to_json(), topology.to_json());
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

TEST(Topology, SplitCommunicatorsHaveTheirOwn) {
  Communicator world = Communicator::world();
  Communicator halves = world.split(world.rank() % 2, world.rank());
  const Topology& topology = halves.topology();
  EXPECT_EQ(topology.size(), halves.size());
  EXPECT_EQ(topology.node_count(), 1);
  EXPECT_EQ(topology.local_rank(halves.rank()), halves.rank());
  // And the node algorithms work on them.
  std::vector<int> values(1000, halves.rank() + 1);
  AllReduceOptions options;
  options.algorithm = Algorithm::kSharedMemory;
  halves.all_reduce(std::span<int>(values), options);
  const int expected = halves.size() * (halves.size() + 1) / 2;
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(values[i], expected) << "rank " << world.rank() << " index " << i;
  }
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

TEST(Topology, VirtualNodesFromAFile) {
  const int ranks = Communicator::world().size();
  for (const std::vector<int>& layout : testing_support::node_layouts(ranks)) {
    Communicator comm = testing_support::with_virtual_nodes(layout);
    const Topology& topology = comm.topology();
    ASSERT_EQ(topology.node_count(), static_cast<int>(layout.size()));
    int first = 0;
    for (std::size_t n = 0; n < layout.size(); ++n) {
      EXPECT_EQ(topology.node(static_cast<int>(n)).host, "virtual" + std::to_string(n));
      for (int i = 0; i < layout[n]; ++i) {
        EXPECT_EQ(topology.node_of(first + i), static_cast<int>(n));
        EXPECT_EQ(topology.local_rank(first + i), i);
      }
      first += layout[n];
    }
    // Shared memory refuses, naming the reason; hierarchical serves.
    if (layout.size() > 1) {
      float value = 1.0f;
      AllReduceOptions options;
      options.algorithm = Algorithm::kSharedMemory;
      EXPECT_THROW(comm.all_reduce(&value, &value, 1, DataType::kFloat32, options),
                   UnsupportedError);
    }
  }
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

TEST(Topology, MachineDescriptionFileReplacesHardware) {
  const std::string path = temp_path("machine") + ".synthetic";
  {
    std::ofstream out(path);
    out << "package:2 numa:1 core:6 pu:2\n";
  }
  setenv("COLLECTIVE_TOPOLOGY_FILE", path.c_str(), 1);
  Communicator comm = Communicator::world();
  unsetenv("COLLECTIVE_TOPOLOGY_FILE");
  std::remove(path.c_str());
  const Node& node = comm.topology().node(0);
  EXPECT_EQ(node.packages, 2);
  EXPECT_EQ(node.cores, 12);
  EXPECT_EQ(node.processing_units, 24);
  EXPECT_EQ(comm.topology().node_count(), 1);  // MPI still places the ranks
  EXPECT_EQ(static_cast<int>(node.ranks.size()), comm.size());
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

// Rank 0 reads `rank0_content`, the others `others_content` (each rank its
// own file): creation must fail on every rank, rank 0 with `rank0_needle`
// in the message, the others with `others_needle`.
void expect_creation_fails_everywhere(const std::string& rank0_content,
                                      const std::string& others_content, const char* rank0_needle,
                                      const char* others_needle) {
  const int rank = Communicator::world().rank();
  const std::string path = temp_path("bad") + ".json";
  {
    std::ofstream out(path);
    out << (rank == 0 ? rank0_content : others_content);
  }
  setenv("COLLECTIVE_TOPOLOGY_FILE", path.c_str(), 1);
  bool threw = false;
  std::string what;
  try {
    Communicator::world();
  } catch (const InvalidArgumentError& error) {
    threw = true;
    what = error.what();
  }
  unsetenv("COLLECTIVE_TOPOLOGY_FILE");
  std::remove(path.c_str());
  EXPECT_TRUE(threw) << "rank " << rank << " created a communicator";
  const char* needle = rank == 0 ? rank0_needle : others_needle;
  EXPECT_NE(what.find(needle), std::string::npos) << "rank " << rank << ": " << what;
}

TEST(Topology, BadFileFailsOnEveryRank) {
  const int ranks = Communicator::world().size();
  expect_creation_fails_everywhere("{\"nodes\": [", "{\"nodes\": [", "JSON", "JSON");
  // A rank list that skips rank 0.
  std::ostringstream wrong;
  wrong << "{\"nodes\": [{\"processing_units\": 2, \"ranks\": [";
  for (int r = 0; r < ranks; ++r) wrong << (r ? ", " : "") << (r == 0 ? ranks : r);
  wrong << "]}]}";
  expect_creation_fails_everywhere(wrong.str(), wrong.str(), "rank lists", "rank lists");
  // Only rank 0's file is bad: the others fail too, naming rank 0.
  expect_creation_fails_everywhere("package:nonsense", "package:1 core:2 pu:1", "synthetic",
                                   "rank 0 could not build the topology");
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

// Run with COLLECTIVE_TOPOLOGY_DUMP set (its own ctest registration): world
// rank 0 writes the first communicator's topology there.
TEST(Topology, DumpMatchesTheCommunicator) {
  const char* path = std::getenv("COLLECTIVE_TOPOLOGY_DUMP");
  if (path == nullptr || *path == '\0') {
    GTEST_SKIP() << "COLLECTIVE_TOPOLOGY_DUMP is not set (the topology_dump test sets it)";
  }
  Communicator world = Communicator::world();
  world.barrier();
  if (world.rank() == 0) {
    const Topology dumped = Topology::load(path);
    EXPECT_EQ(dumped.to_json(), world.topology().to_json());
  }
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

}  // namespace
}  // namespace collective
