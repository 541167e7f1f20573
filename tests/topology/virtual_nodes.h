// A communicator over MPI_COMM_WORLD whose ranks are split into "virtual"
// nodes (consecutive ranks, given sizes) through COLLECTIVE_TOPOLOGY_FILE,
// so hierarchical algorithms run with several nodes, equal or not, inside
// one machine. The file's machine fields copy the real node's.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "collective/communicator.h"

namespace collective::testing_support {

inline std::string virtual_topology_json(const std::vector<int>& node_sizes, const Node& machine) {
  std::string json = "{\"nodes\": [";
  int rank = 0;
  for (std::size_t n = 0; n < node_sizes.size(); ++n) {
    json += (n == 0 ? "" : ", ");
    json += "{\"host\": \"virtual" + std::to_string(n) +
            "\", \"processing_units\": " + std::to_string(machine.processing_units) +
            ", \"cores\": " + std::to_string(machine.cores) + ", \"ranks\": [";
    for (int i = 0; i < node_sizes[n]; ++i, ++rank) {
      json += (i == 0 ? "" : ", ") + std::to_string(rank);
    }
    json += "]}";
  }
  return json + "]}";
}

// Collective over MPI_COMM_WORLD; the sizes must add up to its size.
inline Communicator with_virtual_nodes(const std::vector<int>& node_sizes) {
  Communicator world = Communicator::world();
  const std::string path = "/tmp/collective-virtual-nodes-" + std::to_string(getpid()) + ".json";
  {
    std::ofstream out(path, std::ios::trunc);
    out << virtual_topology_json(node_sizes, world.topology().node(0));
  }
  setenv("COLLECTIVE_TOPOLOGY_FILE", path.c_str(), 1);
  struct Cleanup {
    std::string path;
    ~Cleanup() {
      unsetenv("COLLECTIVE_TOPOLOGY_FILE");
      std::remove(path.c_str());
    }
  } cleanup{path};
  return Communicator::world();
}

// Every way of cutting `ranks` consecutive ranks into nodes that the tests
// cover: equal, unequal either way, one rank per node, one node.
inline std::vector<std::vector<int>> node_layouts(int ranks) {
  switch (ranks) {
    case 1: return {{1}};
    case 2: return {{2}, {1, 1}};
    case 3: return {{3}, {2, 1}, {1, 2}, {1, 1, 1}};
    case 4: return {{4}, {2, 2}, {3, 1}, {1, 3}, {1, 2, 1}, {1, 1, 1, 1}};
    default: return {{ranks}};
  }
}

}  // namespace collective::testing_support
