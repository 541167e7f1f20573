// The machines a communicator's ranks run on, as the library sees them: a
// read-only value, identical on every rank. Built once per communicator from
// hwloc on each node, gathered over MPI (see docs/topology.md), or loaded
// from a file (COLLECTIVE_TOPOLOGY_FILE). AUTO chooses algorithms from it.
#pragma once

#include "collective/export.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace collective {

// An accelerator as hwloc reports it (NVIDIA devices: an OS device such as
// "cuda0" or "nvml0", else the PCI function itself).
struct GpuDevice {
  std::string name;        // "cuda0", or "pci 0000:1b:00.0" without an OS device
  std::string model;       // "NVIDIA H100 80GB HBM3" when known, else ""
  std::string pci_bus_id;  // "0000:1b:00.0", or "" when not on PCI
  int numa_node = -1;      // logical index of the nearest NUMA node; -1: unknown
};

// A network interface (Ethernet, IP over InfiniBand, or an OpenFabrics
// device such as an InfiniBand or RoCE HCA).
struct NetworkDevice {
  std::string name;  // "eth0", "mlx5_0"
  std::string kind;  // "ethernet", "ipoib" (IP over InfiniBand), "openfabrics" or "other"
  std::string pci_bus_id;
  int numa_node = -1;
  // The link's data rate as the OS reports it (Ethernet and IPoIB: the
  // interface's speed; OpenFabrics: the fastest active port's rate); 0 when
  // unknown (link down, a virtual NIC without one, a description from hwloc
  // XML or a synthetic topology).
  std::uint64_t link_bits_per_second = 0;
};

// One machine (a shared-memory domain: the ranks MPI_Comm_split_type with
// MPI_COMM_TYPE_SHARED puts together).
struct Node {
  std::string host;
  int packages = 0;  // processor sockets
  int numa_nodes = 0;
  int cores = 0;
  int processing_units = 0;          // hardware threads
  std::uint64_t memory_bytes = 0;    // 0: unknown
  std::uint64_t l3_cache_bytes = 0;  // largest last-level cache; 0: unknown
  std::vector<GpuDevice> gpus;
  std::vector<NetworkDevice> nics;
  std::vector<int> ranks;  // communicator ranks on this node, ascending
  std::string source;      // "hwloc", "hwloc-xml <file>", "synthetic <description>", "file <path>"
};

// Where one rank runs.
struct RankPlacement {
  int node = 0;        // index into Topology::nodes()
  int local_rank = 0;  // position among the node's ranks
  std::string cpuset;  // processors it is bound to ("0-3,8"), "" when unbound or unknown
  int bound_processing_units = 0;  // how many; 0: unbound or unknown
};

class COLLECTIVE_API Topology {
 public:
  Topology() = default;

  int size() const { return static_cast<int>(placements_.size()); }  // ranks
  int node_count() const { return static_cast<int>(nodes_.size()); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(int index) const;
  const RankPlacement& placement(int rank) const;
  int node_of(int rank) const { return placement(rank).node; }
  int local_rank(int rank) const { return placement(rank).local_rank; }
  int min_ranks_per_node() const;
  int max_ranks_per_node() const;
  // Every node has the same ranks per node, cores, packages and GPUs.
  bool nodes_alike() const;
  // The processing units a node's ranks may run on: the union of their
  // bindings (taskset, mpirun --cpu-set, a batch system's affinity), or all
  // of the node's when any rank is unbound or its binding unknown.
  int usable_processing_units(int node) const;
  // More ranks on some node than the processing units they may run on
  // (they time-share).
  bool oversubscribed() const;
  int gpus_per_node() const;  // smallest GPU count of any node

  // The dump format of COLLECTIVE_TOPOLOGY_DUMP (docs/topology.md).
  std::string to_json() const;
  // Several lines for people (collective_info, logs).
  std::string describe() const;

  // Loads a topology for selection experiments (collective_info, tests):
  // `path` holds a dump (JSON), hwloc XML, or an hwloc synthetic description
  // such as "package:2 core:16 pu:2" (the content decides). A dump that
  // already places ranks is returned as it is when nodes and ranks_per_node
  // are 0; otherwise the file's machine (the first node of a dump) is
  // replicated `nodes` times with `ranks_per_node` ranks each.
  // Throws InvalidArgumentError naming the file and what is wrong.
  static Topology load(const std::string& path, int nodes = 0, int ranks_per_node = 0);

  // The same from text already in memory; `origin` names it in errors.
  static Topology parse(std::string_view text, const std::string& origin, int nodes = 0,
                        int ranks_per_node = 0);

  // Builds a value from its parts, checking that they agree (every rank
  // placed once, node rank lists ascending and matching the placements).
  static Topology from_parts(std::vector<Node> nodes, std::vector<RankPlacement> placements);

 private:
  int count_usable_processing_units(int node) const;

  std::vector<Node> nodes_;
  std::vector<RankPlacement> placements_;
  std::vector<int> usable_processing_units_;  // per node, counted by from_parts
};

}  // namespace collective
