// Run across real separate hosts (scripts/netns_cluster.sh: network
// namespaces, shared memory inside each, TCP between): the topology sees
// the hosts, hierarchical all-reduce is exact for every type and op, and
// AUTO takes it for large messages.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "exact_inputs.h"

namespace collective {
namespace {

using testing_support::check_result;
using testing_support::fill_inputs;

bool all_ranks_agree(bool ok) {
  int value = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return value == 1;
}

std::set<std::string> host_names() {
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, MPI_COMM_WORLD);
  std::set<std::string> names;
  for (int r = 0; r < size; ++r)
    names.insert(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
  return names;
}

TEST(Cluster, TopologySeesEveryHost) {
  Communicator world = Communicator::world();
  const Topology& topology = world.topology();
  const std::set<std::string> hosts = host_names();
  ASSERT_GE(hosts.size(), 2u) << "run through scripts/netns_cluster.sh (one host only)";
  EXPECT_EQ(topology.node_count(), static_cast<int>(hosts.size()));
  for (const Node& node : topology.nodes()) {
    EXPECT_EQ(hosts.count(node.host), 1u) << node.host;
  }
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  EXPECT_EQ(topology.node(topology.node_of(world.rank())).host,
            std::string(name, static_cast<std::size_t>(length)));
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

TEST(Cluster, HierarchicalIsExactAcrossHosts) {
  Communicator world = Communicator::world();
  for (const DataType type : testing_support::kAllTypes) {
    for (const ReduceOp op : testing_support::kAllOps) {
      if (!op_applies_to(op, type)) continue;
      for (const std::size_t count : {std::size_t{1}, std::size_t{67}, std::size_t{70001}}) {
        const std::size_t bytes = count * element_size(type);
        std::vector<std::byte> send(bytes);
        std::vector<std::byte> recv(bytes);
        fill_inputs(send.data(), count, type, op, world.rank());
        AllReduceOptions options;
        options.algorithm = Algorithm::kHierarchical;
        options.op = op;
        world.all_reduce(send.data(), recv.data(), count, type, options);
        check_result(recv.data(), count, type, op, world.size(), world.rank(),
                     "hierarchical across hosts, count " + std::to_string(count));
      }
    }
  }
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

TEST(Cluster, AutoTakesHierarchicalForLargeMessagesAndIsExact) {
  Communicator world = Communicator::world();
  const std::size_t count = (std::size_t{16} << 20) / sizeof(float);
  EXPECT_EQ(world.choose_algorithm(CollectiveKind::kAllReduce, count, DataType::kFloat32),
            Algorithm::kHierarchical);
  std::vector<float> buffer(count);
  fill_inputs(buffer.data(), count, DataType::kFloat32, ReduceOp::kSum, world.rank());
  world.all_reduce(std::span<float>(buffer));
  EXPECT_EQ(world.last_algorithm(), Algorithm::kHierarchical);
  check_result(buffer.data(), count, DataType::kFloat32, ReduceOp::kSum, world.size(), world.rank(),
               "AUTO 16 MiB across hosts");
  // Shared memory alone cannot span hosts.
  AllReduceOptions options;
  options.algorithm = Algorithm::kSharedMemory;
  EXPECT_THROW(world.all_reduce(buffer.data(), buffer.data(), 1, DataType::kFloat32, options),
               UnsupportedError);
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

}  // namespace
}  // namespace collective
