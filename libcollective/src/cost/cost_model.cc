#include "cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "core/env_params.h"
#include "topology/link_speed.h"

namespace collective::internal {

Shape shape_of(const Request& request, const Topology& topology) {
  Shape shape{};
  shape.bytes = static_cast<double>(request.bytes());
  shape.ranks = topology.size();
  shape.nodes = topology.node_count();
  shape.per_node = topology.max_ranks_per_node();
  shape.owners = topology.min_ranks_per_node();
  shape.oversubscription = 1.0;
  shape.cache_bytes = 0.0;
  for (int i = 0; i < topology.node_count(); ++i) {
    const Node& node = topology.node(i);
    const int usable = topology.usable_processing_units(i);
    if (usable > 0) {
      shape.oversubscription =
          std::max(shape.oversubscription,
                   static_cast<double>(node.ranks.size()) / static_cast<double>(usable));
    }
    const double cache = static_cast<double>(node.l3_cache_bytes);
    if (cache > 0 && (shape.cache_bytes == 0 || cache < shape.cache_bytes))
      shape.cache_bytes = cache;
  }
  if (shape.cache_bytes == 0) shape.cache_bytes = kUnknownCacheBytes;
  return shape;
}

namespace {

bool has_fabric(const Topology& topology) {
  for (const Node& node : topology.nodes()) {
    bool any = false;
    for (const NetworkDevice& nic : node.nics) any = any || nic.kind == "openfabrics";
    if (!any) return false;
  }
  return !topology.nodes().empty();
}

// Whether a NIC carries the traffic of the network the model picked: MPI
// over the fabric uses the OpenFabrics device, TCP any IP interface
// (Ethernet or IP over InfiniBand).
bool carries(bool fabric, const NetworkDevice& nic) {
  return fabric ? nic.kind == "openfabrics" : nic.kind == "ethernet" || nic.kind == "ipoib";
}

}  // namespace

// How many ring edges leave the busiest node: flows that share its NIC.
int ring_flows_per_node(const Topology& topology) {
  std::vector<int> leaving(static_cast<std::size_t>(topology.node_count()), 0);
  for (int rank = 0; rank < topology.size(); ++rank) {
    const int next = (rank + 1) % topology.size();
    if (topology.node_of(rank) != topology.node_of(next)) {
      ++leaving[static_cast<std::size_t>(topology.node_of(rank))];
    }
  }
  return std::max(1, *std::max_element(leaving.begin(), leaving.end()));
}

double handoff_seconds(const Shape& shape) {
  return shape.oversubscription > 1.0 ? kShmHandoffOversubscribedSeconds * shape.oversubscription
                                      : kShmHandoffSeconds;
}

double slot_rounds(double bytes) {
  const double slot = static_cast<double>(env_params().shm_slot_bytes);
  return std::max(1.0, std::ceil(bytes / slot));
}

// Work every rank of a node does at once: `streamed` bytes between memory
// and cache (memory speed once the node's buffers outgrow its cache),
// `cached` bytes copied inside the cache and `reduced` bytes of reduction
// input; ranks beyond the processing units take turns.
double node_work_seconds(const Shape& shape, double streamed, double cached, double reduced) {
  const bool spills = shape.bytes * 2.0 * shape.per_node > shape.cache_bytes;
  const double stream_rate = spills ? kMemoryCopyBytesPerSecond : kCacheCopyBytesPerSecond;
  return (streamed / stream_rate + cached / kCacheCopyBytesPerSecond +
          reduced / kReduceBytesPerSecond) *
         shape.oversubscription;
}

// One step of a flat algorithm moving `bytes` per rank: latency of the
// slowest link, and the slower of a local MPI copy (stretched by the ranks
// per processing unit: copies are CPU work) and the NIC shared by `flows`
// ranks of a node.
double flat_step_seconds(const Topology& topology, const Shape& shape, double bytes, int flows) {
  const LinkCost local = link_cost(LinkKind::kLocalMpi, topology);
  double seconds = local.latency_seconds + bytes / local.bytes_per_second * shape.oversubscription;
  if (shape.nodes > 1) {
    const LinkCost net = link_cost(LinkKind::kNetwork, topology);
    seconds = std::max(seconds, net.latency_seconds + bytes * flows / net.bytes_per_second);
  }
  return seconds;
}

double message_latency_seconds(const Topology& topology, const Shape& shape) {
  const double local = link_cost(LinkKind::kLocalMpi, topology).latency_seconds;
  if (shape.nodes <= 1) return local;
  return std::max(local, link_cost(LinkKind::kNetwork, topology).latency_seconds);
}

double spread_exchange_seconds(const Topology& topology, const Shape& shape, double bytes) {
  if (shape.ranks < 2) return 0.0;
  // A rank of the busiest node has per_node - 1 peers beside it.
  const double peers = shape.ranks - 1.0;
  const double off_node = shape.nodes > 1 ? (shape.ranks - shape.per_node) / peers : 0.0;
  const LinkCost local = link_cost(LinkKind::kLocalMpi, topology);
  double seconds = bytes * (1.0 - off_node) / local.bytes_per_second * shape.oversubscription;
  if (shape.nodes > 1) {
    const LinkCost net = link_cost(LinkKind::kNetwork, topology);
    seconds = std::max(seconds, shape.per_node * bytes * off_node / net.bytes_per_second);
  }
  return seconds;
}

Shape node_shape(std::size_t bytes, const Topology& topology, int node) {
  Shape shape{};
  shape.bytes = static_cast<double>(bytes);
  const Node& described = topology.node(node);
  shape.ranks = static_cast<int>(described.ranks.size());
  shape.nodes = 1;
  shape.per_node = shape.ranks;
  shape.owners = shape.ranks;
  const int usable = topology.usable_processing_units(node);
  shape.oversubscription =
      usable > 0 ? std::max(1.0, static_cast<double>(shape.ranks) / usable) : 1.0;
  shape.cache_bytes = described.l3_cache_bytes > 0 ? static_cast<double>(described.l3_cache_bytes)
                                                   : kUnknownCacheBytes;
  return shape;
}

NetworkModel network_model(const Topology& topology) {
  const bool fabric = has_fabric(topology);
  NetworkModel model{fabric ? "openfabrics" : "ethernet",
                     fabric ? LinkCost{kFabricLatencySeconds, kFabricBytesPerSecond}
                            : LinkCost{kEthernetLatencySeconds, kEthernetBytesPerSecond},
                     0, -1};
  // Bandwidth from the links: a node's traffic can leave through its
  // fastest NIC of that kind, and every ring or exchange between nodes goes
  // at the pace of the slowest node, so the slowest node's best speed. Only
  // when every node reports one: a node without a known speed could be the
  // slowest, so then the assumed constant stays.
  std::uint64_t slowest = 0;
  for (int i = 0; i < topology.node_count(); ++i) {
    std::uint64_t best = 0;
    for (const NetworkDevice& nic : topology.node(i).nics) {
      if (carries(fabric, nic)) best = std::max(best, nic.link_bits_per_second);
    }
    if (best == 0) {
      model.node_without_speed = i;
      return model;
    }
    slowest = slowest == 0 ? best : std::min(slowest, best);
  }
  if (slowest == 0) return model;  // no nodes
  model.link_bits_per_second = slowest;
  // The line rate in bytes, as the assumed constants are (10 Gb/s = 1.25
  // GB/s): neither counts protocol overhead, so the two compare.
  model.cost.bytes_per_second = static_cast<double>(slowest) / 8.0;
  return model;
}

std::string describe_network(const Topology& topology) {
  const NetworkModel model = network_model(topology);
  char number[32];
  std::string text = "network ";
  text += model.kind;
  std::snprintf(number, sizeof(number), " %.3g GB/s ", model.cost.bytes_per_second / 1e9);
  text += number;
  if (model.link_bits_per_second != 0) {
    text += "measured from the link (slowest node's best: " +
            link_speed_text(model.link_bits_per_second) + ")";
  } else if (model.node_without_speed >= 0) {
    const Node& node = topology.node(model.node_without_speed);
    const bool fabric = std::string_view(model.kind) == "openfabrics";
    text += "assumed (node " + std::to_string(model.node_without_speed) + " (" + node.host +
            ") reports no " + (fabric ? "openfabrics" : "ethernet or ipoib") + " link speed)";
  } else {
    text += "assumed";
  }
  std::snprintf(number, sizeof(number), ", latency %.3g us assumed",
                model.cost.latency_seconds * 1e6);
  return text + number;
}

LinkCost link_cost(LinkKind kind, const Topology& topology) {
  double factor = 1.0;  // ranks per processing unit on the busiest node
  for (int i = 0; i < topology.node_count(); ++i) {
    const int usable = topology.usable_processing_units(i);
    if (usable > 0) {
      factor = std::max(factor, static_cast<double>(topology.node(i).ranks.size()) / usable);
    }
  }
  const bool oversubscribed = factor > 1.0;
  switch (kind) {
    case LinkKind::kSharedMemory:
      return {oversubscribed ? kShmHandoffOversubscribedSeconds * factor : kShmHandoffSeconds,
              kMemoryCopyBytesPerSecond};
    case LinkKind::kLocalMpi:
      return {
          oversubscribed ? kLocalMpiOversubscribedLatencySeconds * factor : kLocalMpiLatencySeconds,
          kLocalMpiBytesPerSecond};
    case LinkKind::kNetwork: return network_model(topology).cost;
  }
  return {kLocalMpiLatencySeconds, kLocalMpiBytesPerSecond};
}

}  // namespace collective::internal
