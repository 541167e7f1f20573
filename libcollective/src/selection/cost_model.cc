#include "selection/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "algorithms/node_segment.h"
#include "core/env_params.h"
#include "topology/link_speed.h"

namespace collective::internal {
namespace {

// ---- Constants. Each says what it stands for and why this value. ----------
// Measured values come from the development machine (2-core AMD EPYC VM,
// Open MPI 4.1.4 with vader and CMA); docs/performance.md has the
// runs. They need to order the algorithms correctly, not predict times.

// A flag hand-off between two ranks on their own cores: one cache line
// moving between cores plus the poll; an 8-byte shared-memory all-reduce
// at 2 ranks measured ~0.4 us with the call overhead below.
constexpr double kShmHandoffSeconds = 0.2e-6;
// The same when ranks outnumber processors, per rank per processing unit:
// the waiter yields and the writer must be scheduled; 8 bytes at 4 ranks on
// 2 cores (2 per unit) measured ~5.6 us.
constexpr double kShmHandoffOversubscribedSeconds = 2.5e-6;
// Streaming copy between memory and cache for one core (memcpy of buffers
// beyond the last-level cache, bytes copied): ~8 GB/s on the VM when quiet.
constexpr double kMemoryCopyBytesPerSecond = 8e9;
// Copy of data already in cache (the pieces of a round): ~20 GB/s.
constexpr double kCacheCopyBytesPerSecond = 20e9;
// Element-wise reduction of in-cache inputs (vectorized float32 add), bytes
// of input read: ~15 GB/s.
constexpr double kReduceBytesPerSecond = 15e9;
// Fixed cost of a call (validation, remembered selection, deadline): ~0.2 us.
constexpr double kCallSeconds = 0.2e-6;

// MPI point-to-point inside a node (Open MPI vader; CMA single copy above
// 32 KiB) through PeerExchange: the 8-byte ring (2 messages per rank)
// measured ~1.2 us at 2 ranks, so ~0.5 us a message; CMA copies measured
// ~2-2.5 GB/s on this VM (pinning pages is slow under virtualization).
constexpr double kLocalMpiLatencySeconds = 0.5e-6;
constexpr double kLocalMpiBytesPerSecond = 2.5e9;
// With more ranks than processors every message waits for its receiver to
// be scheduled, per rank per processing unit: 8-byte recursive doubling at
// 4 ranks on 2 cores measured ~5 us a step, the ring 4-7 us.
constexpr double kLocalMpiOversubscribedLatencySeconds = 2.5e-6;

// Between nodes over TCP (Ethernet): kernel network stacks on both sides,
// ~25 us for a small message; 10 Gb/s = 1.25 GB/s for the node's NIC, the
// common data-centre Ethernet. The latency is always assumed (nothing
// reports it); the bandwidth only when some node's NICs report no link
// speed (network_model below).
constexpr double kEthernetLatencySeconds = 25e-6;
constexpr double kEthernetBytesPerSecond = 1.25e9;
// Nodes with an OpenFabrics (InfiniBand/RoCE) device: ~3 us and 100 Gb/s
// (12.5 GB/s), an EDR/HDR100 port; the model assumes MPI uses the fabric.
// As for Ethernet, the latency is always assumed and the bandwidth only
// when some node's OpenFabrics device reports no active port's rate.
constexpr double kFabricLatencySeconds = 3e-6;
constexpr double kFabricBytesPerSecond = 12.5e9;
// ---------------------------------------------------------------------------

struct Shape {
  double bytes;             // one rank's buffer
  int ranks;                // p
  int nodes;                // m
  int per_node;             // most ranks on any node (L)
  int owners;               // fewest ranks on any node (k)
  double oversubscription;  // ranks per processing unit on the busiest node, at least 1
  double cache_bytes;       // smallest last-level cache of any node (0: unknown)
};

Shape shape_of(const Request& request, const Topology& topology) {
  Shape shape{};
  shape.bytes = static_cast<double>(request.bytes());
  shape.ranks = topology.size();
  shape.nodes = topology.node_count();
  shape.per_node = topology.max_ranks_per_node();
  shape.owners = topology.min_ranks_per_node();
  shape.oversubscription = 1.0;
  shape.cache_bytes = 0.0;
  for (const Node& node : topology.nodes()) {
    if (node.processing_units > 0) {
      shape.oversubscription =
          std::max(shape.oversubscription, static_cast<double>(node.ranks.size()) /
                                               static_cast<double>(node.processing_units));
    }
    const double cache = static_cast<double>(node.l3_cache_bytes);
    if (cache > 0 && (shape.cache_bytes == 0 || cache < shape.cache_bytes)) shape.cache_bytes = cache;
  }
  if (shape.cache_bytes == 0) shape.cache_bytes = 8.0 * 1024 * 1024;
  return shape;
}

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

// Every rank copies its input in and reduces all L inputs itself: one
// hand-off a round.
double redundant_seconds(const Shape& shape) {
  const double n = shape.bytes;
  return slot_rounds(n) * handoff_seconds(shape) +
         node_work_seconds(shape, 0, n, shape.per_node * n);
}

bool redundant_is_cheaper(const Shape& shape) {
  if (shape.bytes > static_cast<double>(env_params().shm_small_bytes)) return false;
  if (shape.bytes <= static_cast<double>(kInlineBytes)) return true;
  // Split: the input staged, 1/L of the reduction, the result copied out,
  // two hand-offs.
  const double n = shape.bytes;
  const double split = 2.0 * handoff_seconds(shape) +
                       node_work_seconds(shape, 0, n + n, n);
  return redundant_seconds(shape) <= split;
}

// Shared-memory all-reduce inside one node of L ranks (node_phases.cc).
double shared_memory_seconds(const Shape& shape) {
  const double n = shape.bytes;
  const double local = shape.per_node;
  if (redundant_is_cheaper(shape)) return redundant_seconds(shape);
  // Per rank: the input read once and the output written once (streamed),
  // (L-1)/L of it staged and all of it copied out of the result slots
  // (cached), and a reduction reading n bytes. Two hand-offs a round,
  // pipelined over four slots: count one round's worth of them.
  const double staged = n * (local - 1.0) / local;
  return 2.0 * handoff_seconds(shape) * std::min(slot_rounds(n), 4.0) +
         node_work_seconds(shape, n, staged + n, n);
}

// The node reduce-scatter and all-gather of the hierarchical algorithm:
// the traffic of shared_memory plus each owner's region copied once more
// (from its output into the result slots), in two passes that do not
// overlap, one hand-off a round each.
double node_phases_seconds(const Shape& shape) {
  const double n = shape.bytes;
  const double local = shape.per_node;
  const double staged = n * (local - 1.0) / local;
  return 2.0 * handoff_seconds(shape) * slot_rounds(n) +
         node_work_seconds(shape, n, staged + n + n / local, n);
}

// One step of a flat algorithm moving `bytes` per rank: latency of the
// slowest link, and the slower of a local MPI copy and the NIC shared by
// `flows` ranks of a node.
double flat_step_seconds(const Topology& topology, const Shape& shape, double bytes, int flows) {
  const LinkCost local = link_cost(LinkKind::kLocalMpi, topology);
  double seconds = local.latency_seconds + bytes / local.bytes_per_second;
  if (shape.nodes > 1) {
    const LinkCost net = link_cost(LinkKind::kNetwork, topology);
    seconds = std::max(seconds, net.latency_seconds + bytes * flows / net.bytes_per_second);
  }
  return seconds;
}

double ring_seconds(const Topology& topology, const Shape& shape) {
  const double p = shape.ranks;
  const int flows = shape.nodes > 1 ? ring_flows_per_node(topology) : 1;
  return 2.0 * (p - 1.0) * flat_step_seconds(topology, shape, shape.bytes / p, flows) +
         (p - 1.0) / p * shape.bytes / kReduceBytesPerSecond * shape.oversubscription;
}

double recursive_doubling_seconds(const Topology& topology, const Shape& shape) {
  int power = 1;
  int exchanges = 0;
  while (power * 2 <= shape.ranks) {
    power *= 2;
    ++exchanges;
  }
  const double steps = exchanges + (power == shape.ranks ? 0 : 2);
  // Every exchange crosses between nodes for some pair, all of a node's
  // ranks at once.
  const int flows = shape.nodes > 1 ? shape.per_node : 1;
  return steps * flat_step_seconds(topology, shape, shape.bytes, flows) +
         exchanges * shape.bytes / kReduceBytesPerSecond * shape.oversubscription;
}

}  // namespace

bool shared_memory_redundant(std::size_t bytes, const Topology& topology, int node) {
  Shape shape{};
  shape.bytes = static_cast<double>(bytes);
  const Node& described = topology.node(node);
  shape.ranks = static_cast<int>(described.ranks.size());
  shape.nodes = 1;
  shape.per_node = shape.ranks;
  shape.owners = shape.ranks;
  shape.oversubscription =
      described.processing_units > 0
          ? std::max(1.0, static_cast<double>(shape.ranks) / described.processing_units)
          : 1.0;
  shape.cache_bytes = described.l3_cache_bytes > 0 ? static_cast<double>(described.l3_cache_bytes)
                                                   : 8.0 * 1024 * 1024;
  return redundant_is_cheaper(shape);
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
  std::snprintf(number, sizeof(number), ", latency %.3g us assumed", model.cost.latency_seconds * 1e6);
  return text + number;
}

LinkCost link_cost(LinkKind kind, const Topology& topology) {
  double factor = 1.0;  // ranks per processing unit on the busiest node
  for (const Node& node : topology.nodes()) {
    if (node.processing_units > 0) {
      factor = std::max(factor, static_cast<double>(node.ranks.size()) / node.processing_units);
    }
  }
  const bool oversubscribed = factor > 1.0;
  switch (kind) {
    case LinkKind::kSharedMemory:
      return {oversubscribed ? kShmHandoffOversubscribedSeconds * factor : kShmHandoffSeconds,
              kMemoryCopyBytesPerSecond};
    case LinkKind::kLocalMpi:
      return {oversubscribed ? kLocalMpiOversubscribedLatencySeconds * factor
                             : kLocalMpiLatencySeconds,
              kLocalMpiBytesPerSecond};
    case LinkKind::kNetwork:
      return network_model(topology).cost;
  }
  return {kLocalMpiLatencySeconds, kLocalMpiBytesPerSecond};
}

std::optional<double> model_seconds(Algorithm algorithm, const Request& request,
                                    const Topology& topology) {
  if (topology.size() < 1 || request.kind != CollectiveKind::kAllReduce) return std::nullopt;
  const Shape shape = shape_of(request, topology);
  const bool spans_nodes = shape.nodes > 1;
  switch (algorithm) {
    case Algorithm::kSharedMemory:
      if (spans_nodes) return std::nullopt;
      return kCallSeconds + shared_memory_seconds(shape);
    case Algorithm::kHierarchical: {
      double seconds = kCallSeconds + node_phases_seconds(shape);
      if (spans_nodes) {
        // A ring of m nodes for each of the k regions; a node's k owners
        // share its NIC, so the node moves 2(m-1)/m of the buffer in all.
        const double m = shape.nodes;
        const LinkCost net = link_cost(LinkKind::kNetwork, topology);
        seconds += 2.0 * (m - 1.0) * (net.latency_seconds + shape.bytes / m / net.bytes_per_second);
      }
      return seconds;
    }
    case Algorithm::kRing:
      return kCallSeconds + ring_seconds(topology, shape);
    case Algorithm::kRecursiveDoubling:
      return kCallSeconds + recursive_doubling_seconds(topology, shape);
    default:
      return std::nullopt;
  }
}

}  // namespace collective::internal
