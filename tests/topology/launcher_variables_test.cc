// The node and local rank of every rank come from the MPI communicator, not
// from what a launcher exports (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID,
// MPI_LOCALRANKID, ...). ctest runs this binary plainly and through
// misleading_launcher_env.sh, which sets those variables to wrong values on
// every rank; the topology must be the same truth both ways. The truth is
// taken from MPI_Get_processor_name gathered over MPI_COMM_WORLD, a path the
// library does not use (it splits by shared memory).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace collective {
namespace {

bool all_ranks_agree(bool ok) {
  int value = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return value == 1;
}

// Where each rank is, from host names: nodes numbered by their first rank,
// local ranks in rank order, as the library promises.
struct Placement {
  std::vector<int> node_of;
  std::vector<int> local_rank;
  std::vector<std::vector<int>> ranks_of_node;
};

Placement placement_from_host_names() {
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, MPI_COMM_WORLD);
  Placement placement;
  std::map<std::string, int> node_of_host;
  for (int rank = 0; rank < size; ++rank) {
    const std::string host = &all[static_cast<std::size_t>(rank) * MPI_MAX_PROCESSOR_NAME];
    const auto [entry, added] =
        node_of_host.emplace(host, static_cast<int>(placement.ranks_of_node.size()));
    if (added) placement.ranks_of_node.emplace_back();
    auto& ranks = placement.ranks_of_node[static_cast<std::size_t>(entry->second)];
    placement.node_of.push_back(entry->second);
    placement.local_rank.push_back(static_cast<int>(ranks.size()));
    ranks.push_back(rank);
  }
  return placement;
}

int integer_variable(const char* name) {
  const char* text = std::getenv(name);
  return text == nullptr ? -1 : std::atoi(text);
}

TEST(LauncherVariables, TopologyComesFromTheCommunicator) {
  Communicator world = Communicator::world();
  const Topology& topology = world.topology();
  const Placement truth = placement_from_host_names();
  ASSERT_EQ(topology.size(), world.size());
  EXPECT_EQ(topology.node_count(), static_cast<int>(truth.ranks_of_node.size()));
  for (int rank = 0; rank < world.size(); ++rank) {
    const auto r = static_cast<std::size_t>(rank);
    EXPECT_EQ(topology.node_of(rank), truth.node_of[r])
        << "rank " << world.rank() << " sees rank " << rank << " on the wrong node";
    EXPECT_EQ(topology.local_rank(rank), truth.local_rank[r])
        << "rank " << world.rank() << " sees rank " << rank << " with the wrong local rank";
  }
  for (int node = 0;
       node < topology.node_count() && node < static_cast<int>(truth.ranks_of_node.size());
       ++node) {
    EXPECT_EQ(topology.node(node).ranks, truth.ranks_of_node[static_cast<std::size_t>(node)])
        << "rank " << world.rank() << ", ranks of node " << node;
  }
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

// Under misleading_launcher_env.sh the variables must really be wrong on
// this rank, or the test above would prove nothing.
TEST(LauncherVariables, TheVariablesReallyMislead) {
  if (std::getenv("COLLECTIVE_TEST_MISLEADING_LAUNCHER") == nullptr) {
    GTEST_SKIP() << "run plainly: no misleading variables set";
  }
  Communicator world = Communicator::world();
  const Placement truth = placement_from_host_names();
  const auto me = static_cast<std::size_t>(world.rank());
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_NODE_RANK",
                           "SLURM_LOCALID", "MPI_LOCALRANKID", "LOCAL_RANK"}) {
    const int value = integer_variable(name);
    EXPECT_GE(value, 0) << "rank " << world.rank() << ": " << name << " is not set";
    EXPECT_NE(value, truth.local_rank[me]) << "rank " << world.rank() << ": " << name;
  }
  EXPECT_NE(integer_variable("SLURM_NODEID"), truth.node_of[me]) << "rank " << world.rank();
  EXPECT_NE(
      integer_variable("OMPI_COMM_WORLD_LOCAL_SIZE"),
      static_cast<int>(truth.ranks_of_node[static_cast<std::size_t>(truth.node_of[me])].size()))
      << "rank " << world.rank();
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

}  // namespace
}  // namespace collective
