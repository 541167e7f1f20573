// The Topology value: accessors, consistency checks and the description
// for people. Serialization lives in topology_file.cc.
#include "collective/topology.h"

#include <algorithm>
#include <sstream>

#include "collective/errors.h"
#include "topology/cpu_list.h"
#include "topology/link_speed_text.h"

namespace collective {
namespace {

std::string human_bytes(std::uint64_t bytes) {
  std::ostringstream out;
  if (bytes >= (std::uint64_t{1} << 30)) {
    out.precision(1);
    out << std::fixed << static_cast<double>(bytes) / static_cast<double>(1u << 30) << " GiB";
  } else if (bytes >= (1u << 20)) {
    out << bytes / (1u << 20) << " MiB";
  } else if (bytes >= 1024) {
    out << bytes / 1024 << " KiB";
  } else {
    out << bytes << " B";
  }
  return out.str();
}

// "0-3,5" for a sorted rank list.
std::string rank_ranges(const std::vector<int>& ranks) {
  std::ostringstream out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i != 0) out << ',';
    out << ranks[i];
    if (j > i) out << '-' << ranks[j];
    i = j + 1;
  }
  return out.str();
}

bool same_machine(const Node& a, const Node& b) {
  return a.ranks.size() == b.ranks.size() && a.packages == b.packages &&
         a.numa_nodes == b.numa_nodes && a.cores == b.cores &&
         a.processing_units == b.processing_units && a.gpus.size() == b.gpus.size();
}

}  // namespace

const Node& Topology::node(int index) const {
  if (index < 0 || index >= node_count()) {
    throw InvalidArgumentError(
        "Topology::node", -1,
        "node " + std::to_string(index) + " of " + std::to_string(node_count()));
  }
  return nodes_[static_cast<std::size_t>(index)];
}

const RankPlacement& Topology::placement(int rank) const {
  if (rank < 0 || rank >= size()) {
    throw InvalidArgumentError("Topology::placement", -1,
                               "rank " + std::to_string(rank) + " of " + std::to_string(size()));
  }
  return placements_[static_cast<std::size_t>(rank)];
}

int Topology::min_ranks_per_node() const {
  int least = 0;
  for (const Node& n : nodes_) {
    const int count = static_cast<int>(n.ranks.size());
    if (least == 0 || count < least) least = count;
  }
  return least;
}

int Topology::max_ranks_per_node() const {
  int most = 0;
  for (const Node& n : nodes_) most = std::max(most, static_cast<int>(n.ranks.size()));
  return most;
}

bool Topology::nodes_alike() const {
  for (const Node& n : nodes_) {
    if (!same_machine(n, nodes_.front())) return false;
  }
  return true;
}

int Topology::usable_processing_units(int index) const {
  node(index);  // checks the index
  return usable_processing_units_[static_cast<std::size_t>(index)];
}

int Topology::count_usable_processing_units(int index) const {
  const Node& n = node(index);
  if (n.processing_units <= 0) return n.processing_units;  // unknown
  internal::CpuListUnion bound;
  for (int rank : n.ranks) {
    const std::string& cpuset = placement(rank).cpuset;
    if (cpuset.empty() || !bound.add(cpuset)) return n.processing_units;
  }
  return static_cast<int>(std::min<std::int64_t>(n.processing_units, bound.count()));
}

bool Topology::oversubscribed() const {
  for (int i = 0; i < node_count(); ++i) {
    const int usable = usable_processing_units(i);
    if (usable > 0 && static_cast<int>(nodes_[static_cast<std::size_t>(i)].ranks.size()) > usable)
      return true;
  }
  return false;
}

int Topology::gpus_per_node() const {
  if (nodes_.empty()) return 0;
  std::size_t least = nodes_.front().gpus.size();
  for (const Node& n : nodes_) least = std::min(least, n.gpus.size());
  return static_cast<int>(least);
}

Topology Topology::from_parts(std::vector<Node> nodes, std::vector<RankPlacement> placements) {
  auto fail = [](const std::string& why) {
    throw InvalidArgumentError("Topology::from_parts", -1, why);
  };
  if (nodes.empty()) fail("no nodes");
  if (placements.empty()) fail("no ranks");
  std::vector<int> seen(nodes.size(), 0);
  for (std::size_t rank = 0; rank < placements.size(); ++rank) {
    const RankPlacement& place = placements[rank];
    if (place.node < 0 || static_cast<std::size_t>(place.node) >= nodes.size()) {
      fail("rank " + std::to_string(rank) + " is placed on node " + std::to_string(place.node) +
           " of " + std::to_string(nodes.size()));
    }
    const Node& node = nodes[static_cast<std::size_t>(place.node)];
    const auto position = static_cast<std::size_t>(place.local_rank);
    if (place.local_rank < 0 || position >= node.ranks.size() ||
        node.ranks[position] != static_cast<int>(rank)) {
      fail("rank " + std::to_string(rank) + " (local rank " + std::to_string(place.local_rank) +
           ") is not at that position in node " + std::to_string(place.node) + "'s rank list");
    }
    ++seen[static_cast<std::size_t>(place.node)];
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    if (node.ranks.empty()) fail("node " + std::to_string(i) + " (" + node.host + ") has no ranks");
    if (!std::is_sorted(node.ranks.begin(), node.ranks.end()) ||
        std::adjacent_find(node.ranks.begin(), node.ranks.end()) != node.ranks.end()) {
      fail("node " + std::to_string(i) + "'s rank list is not strictly ascending");
    }
    if (static_cast<std::size_t>(seen[i]) != node.ranks.size()) {
      fail("node " + std::to_string(i) + " lists ranks that are not placed on it");
    }
    if (node.packages < 0 || node.numa_nodes < 0 || node.cores < 0 || node.processing_units < 0) {
      fail("node " + std::to_string(i) + " has a negative processor count");
    }
  }
  Topology topology;
  topology.nodes_ = std::move(nodes);
  topology.placements_ = std::move(placements);
  // Counted once: selection reads it on every call (the cost model's
  // oversubscription), and parsing the bindings there cost 80 ns a call.
  for (int i = 0; i < topology.node_count(); ++i)
    topology.usable_processing_units_.push_back(topology.count_usable_processing_units(i));
  return topology;
}

std::string Topology::describe() const {
  std::ostringstream out;
  const int least = min_ranks_per_node();
  const int most = max_ranks_per_node();
  out << size() << (size() == 1 ? " rank" : " ranks") << " on " << node_count()
      << (node_count() == 1 ? " node" : " nodes") << ", ";
  if (least == most) {
    out << least << " per node";
  } else {
    out << least << " to " << most << " per node";
  }
  out << (nodes_alike() ? ", nodes alike" : ", nodes differ")
      << (oversubscribed() ? ", oversubscribed (more ranks than the processing units they may use)"
                           : "")
      << "\n";
  for (int i = 0; i < node_count(); ++i) {
    const Node& n = nodes_[static_cast<std::size_t>(i)];
    out << "node " << i << " " << n.host << ": ranks " << rank_ranges(n.ranks) << "; " << n.packages
        << (n.packages == 1 ? " package, " : " packages, ") << n.numa_nodes
        << (n.numa_nodes == 1 ? " NUMA node, " : " NUMA nodes, ") << n.cores << " cores, "
        << n.processing_units << " PUs";
    if (const int usable = usable_processing_units(i); usable != n.processing_units)
      out << " (its ranks bound to " << usable << ")";
    if (n.memory_bytes != 0) out << ", " << human_bytes(n.memory_bytes);
    if (n.l3_cache_bytes != 0) out << ", last-level cache " << human_bytes(n.l3_cache_bytes);
    out << "; " << n.gpus.size() << (n.gpus.size() == 1 ? " GPU" : " GPUs");
    for (const GpuDevice& gpu : n.gpus) {
      out << (&gpu == &n.gpus.front() ? " (" : ", ") << gpu.name;
      if (gpu.numa_node >= 0) out << "@numa" << gpu.numa_node;
      if (&gpu == &n.gpus.back()) out << ")";
    }
    out << "; NICs:";
    if (n.nics.empty()) out << " none";
    for (const NetworkDevice& nic : n.nics) {
      out << " " << nic.name << " (" << nic.kind << ", "
          << internal::link_speed_text(nic.link_bits_per_second) << ")";
    }
    out << " [" << n.source << "]\n";
    for (const int rank : n.ranks) {
      const RankPlacement& place = placements_[static_cast<std::size_t>(rank)];
      if (place.cpuset.empty()) continue;
      out << "  rank " << rank << " (local " << place.local_rank << ") bound to processors "
          << place.cpuset << "\n";
    }
  }
  return out.str();
}

}  // namespace collective
