#include "selection/cost_model.h"

#include <algorithm>
#include <cmath>

#include "core/env_params.h"

namespace collective::internal {
namespace {

// ---- Constants. Each says what it stands for and why this value. ----------
// Measured values come from the development machine (2-core AMD EPYC VM,
// DDR memory, Open MPI 4.1.4 vader); docs/performance-topology.md has the
// runs. They only need to order algorithms correctly, not predict times.

// A flag hand-off between two ranks on their own cores: one cache line
// moving between cores (~100-200 ns) plus the poll loop; measured 8-byte
// shared-memory all-reduce at 2 ranks: ~0.5 us for one round.
constexpr double kShmHandoffSeconds = 0.25e-6;
// The same when ranks outnumber processors: the waiter must be descheduled
// and the writer scheduled (sched_yield round trip plus a time slice share);
// measured ~4x10 us per round at 4 ranks on 2 cores.
constexpr double kShmHandoffOversubscribedSeconds = 8e-6;
// Streaming copy between memory and cache for one core (memcpy of buffers
// larger than the last-level cache, read + write): measured ~10 GB/s.
constexpr double kMemoryCopyBytesPerSecond = 10e9;
// Copy of data already in cache (the staged pieces of a round): measured
// ~30 GB/s for 256 KiB blocks.
constexpr double kCacheCopyBytesPerSecond = 30e9;
// Element-wise reduction of in-cache inputs (AVX2 float32 add, bytes of
// input read): measured ~20 GB/s.
constexpr double kReduceBytesPerSecond = 20e9;
// A fixed cost per call of every algorithm here (validation, selection,
// bookkeeping): ~0.2 us measured for count 0.
constexpr double kCallSeconds = 0.2e-6;

// MPI point-to-point inside a node (Open MPI's vader BTL, eager copy-in
// copy-out through its own shared FIFO) with PeerExchange's polling: ~1 us
// half round trip for small messages, ~5 GB/s for large ones (two copies).
constexpr double kLocalMpiLatencySeconds = 1.0e-6;
constexpr double kLocalMpiBytesPerSecond = 5e9;
// With more ranks than processors, every message waits for its receiver to
// be scheduled, as the shared-memory hand-off does.
constexpr double kLocalMpiOversubscribedLatencySeconds = 10e-6;

// Between nodes over TCP (Ethernet): kernel network stacks on both sides,
// ~25 us for a small message; 10 Gb/s = 1.25 GB/s for the node's NIC, the
// common data-centre Ethernet, used when nothing better is known.
constexpr double kEthernetLatencySeconds = 25e-6;
constexpr double kEthernetBytesPerSecond = 1.25e9;
// A node with an OpenFabrics (InfiniBand/RoCE) device: ~3 us and 100 Gb/s
// (12.5 GB/s), an EDR/HDR100 port. (MPI over TCP on such a node is slower;
// the model assumes MPI uses the fabric.)
constexpr double kFabricLatencySeconds = 3e-6;
constexpr double kFabricBytesPerSecond = 12.5e9;
// ---------------------------------------------------------------------------

struct Shape {
  double bytes;        // one rank's buffer
  int ranks;           // p
  int nodes;           // m
  int per_node;        // most ranks on any node
  int owners;          // fewest ranks on any node
  double oversubscription;  // ranks per processing unit on the busiest node, at least 1
};

Shape shape_of(const Request& request, const Topology& topology) {
  Shape shape{};
  shape.bytes = static_cast<double>(request.bytes());
  shape.ranks = topology.size();
  shape.nodes = topology.node_count();
  shape.per_node = topology.max_ranks_per_node();
  shape.owners = topology.min_ranks_per_node();
  shape.oversubscription = 1.0;
  for (const Node& node : topology.nodes()) {
    if (node.processing_units > 0) {
      shape.oversubscription =
          std::max(shape.oversubscription, static_cast<double>(node.ranks.size()) /
                                               static_cast<double>(node.processing_units));
    }
  }
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

// Memory work of one node-level pass done by every rank at once: time
// stretches by the oversubscription, since ranks take turns on processors.
double node_work_seconds(double memory_bytes, double cache_bytes, double reduce_bytes,
                         const Shape& shape) {
  return (memory_bytes / kMemoryCopyBytesPerSecond + cache_bytes / kCacheCopyBytesPerSecond +
          reduce_bytes / kReduceBytesPerSecond) *
         shape.oversubscription;
}

double handoff_seconds(const Shape& shape) {
  return shape.oversubscription > 1.0 ? kShmHandoffOversubscribedSeconds * shape.oversubscription
                                      : kShmHandoffSeconds;
}

double rounds_for(double bytes) {
  const double slot = static_cast<double>(env_params().shm_slot_bytes);
  return std::max(1.0, std::ceil(bytes / slot));
}

// Shared-memory all-reduce on one node of L ranks.
double shared_memory_seconds(const Shape& shape) {
  const double n = shape.bytes;
  const double local = shape.per_node;
  if (n <= static_cast<double>(env_params().shm_small_bytes)) {
    // Copy in, one hand-off, every rank reduces all L inputs.
    return rounds_for(n) * handoff_seconds(shape) + node_work_seconds(0, n, local * n, shape);
  }
  // Per rank: the input streamed from memory into staging ((L-1)/L of it)
  // or read directly (own region), L/L reduce reads, and the output
  // streamed back to memory; two hand-offs per round.
  return rounds_for(n) * 2.0 * handoff_seconds(shape) +
         node_work_seconds(2.0 * n, n, n, shape);
}

// Node reduce-scatter + all-gather of the hierarchical algorithm.
double node_phases_seconds(const Shape& shape) {
  const double n = shape.bytes;
  return rounds_for(n) * 2.0 * handoff_seconds(shape) + node_work_seconds(2.0 * n, n, n, shape);
}

double ring_seconds(const Shape& shape, const LinkCost& link, int flows) {
  const double p = shape.ranks;
  const double steps = 2.0 * (p - 1.0);
  const double per_step = shape.bytes / p;
  return steps * (link.latency_seconds + per_step * flows / link.bytes_per_second) +
         (p - 1.0) / p * shape.bytes / kReduceBytesPerSecond * shape.oversubscription;
}

double recursive_doubling_seconds(const Shape& shape, const LinkCost& link, int flows) {
  int power = 1;
  int exchanges = 0;
  while (power * 2 <= shape.ranks) {
    power *= 2;
    ++exchanges;
  }
  const double steps = exchanges + (power == shape.ranks ? 0 : 2);
  return steps * (link.latency_seconds + shape.bytes * flows / link.bytes_per_second) +
         exchanges * shape.bytes / kReduceBytesPerSecond * shape.oversubscription;
}

}  // namespace

LinkCost link_cost(LinkKind kind, const Topology& topology) {
  const bool oversubscribed = topology.oversubscribed();
  switch (kind) {
    case LinkKind::kSharedMemory:
      return {oversubscribed ? kShmHandoffOversubscribedSeconds : kShmHandoffSeconds,
              kMemoryCopyBytesPerSecond};
    case LinkKind::kLocalMpi:
      return {oversubscribed ? kLocalMpiOversubscribedLatencySeconds : kLocalMpiLatencySeconds,
              kLocalMpiBytesPerSecond};
    case LinkKind::kNetwork:
      return has_fabric(topology) ? LinkCost{kFabricLatencySeconds, kFabricBytesPerSecond}
                                  : LinkCost{kEthernetLatencySeconds, kEthernetBytesPerSecond};
  }
  return {kLocalMpiLatencySeconds, kLocalMpiBytesPerSecond};
}

std::optional<double> model_seconds(Algorithm algorithm, const Request& request,
                                    const Topology& topology) {
  if (topology.size() < 1) return std::nullopt;
  const Shape shape = shape_of(request, topology);
  const bool spans_nodes = shape.nodes > 1;
  const LinkCost between = link_cost(spans_nodes ? LinkKind::kNetwork : LinkKind::kLocalMpi, topology);
  const bool all_reduce = request.kind == CollectiveKind::kAllReduce;
  switch (algorithm) {
    case Algorithm::kSharedMemory:
      if (!all_reduce || spans_nodes) return std::nullopt;
      return kCallSeconds + shared_memory_seconds(shape);
    case Algorithm::kHierarchical: {
      if (!all_reduce) return std::nullopt;
      double seconds = kCallSeconds + node_phases_seconds(shape);
      if (spans_nodes) {
        // A ring of m nodes per region; the k owners of a node share its NIC.
        const double m = shape.nodes;
        const LinkCost net = link_cost(LinkKind::kNetwork, topology);
        seconds += 2.0 * (m - 1.0) *
                   (net.latency_seconds + shape.bytes / m / net.bytes_per_second);
      }
      return seconds;
    }
    case Algorithm::kRing:
      if (!all_reduce) return std::nullopt;
      return kCallSeconds + ring_seconds(shape, between, spans_nodes ? ring_flows_per_node(topology) : 1);
    case Algorithm::kRecursiveDoubling:
      if (!all_reduce) return std::nullopt;
      // Every exchange crosses between nodes for some pair, and the node's
      // ranks all exchange at once.
      return kCallSeconds +
             recursive_doubling_seconds(shape, between, spans_nodes ? shape.per_node : 1);
    default:
      return std::nullopt;
  }
}

}  // namespace collective::internal
