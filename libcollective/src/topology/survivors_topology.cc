#include "topology/survivors_topology.h"

#include <utility>

namespace collective::internal {

Topology survivors_topology(const Topology& before, const std::vector<int>& members) {
  std::vector<int> new_node(static_cast<std::size_t>(before.node_count()), -1);
  std::vector<Node> nodes;
  std::vector<RankPlacement> placements;
  for (std::size_t rank = 0; rank < members.size(); ++rank) {
    const RankPlacement& old = before.placement(members[rank]);
    int& index = new_node[static_cast<std::size_t>(old.node)];
    if (index < 0) {
      index = static_cast<int>(nodes.size());
      nodes.push_back(before.node(old.node));
      nodes.back().ranks.clear();
    }
    Node& node = nodes[static_cast<std::size_t>(index)];
    RankPlacement placement = old;
    placement.node = index;
    placement.local_rank = static_cast<int>(node.ranks.size());
    node.ranks.push_back(static_cast<int>(rank));
    placements.push_back(std::move(placement));
  }
  return Topology::from_parts(std::move(nodes), std::move(placements));
}

}  // namespace collective::internal
