// The shared parts of AUTO's cost model: the constants (each with its
// reason), the cost of each kind of link, and the shape of a call. Each
// algorithm owns its formula (CollectiveAlgorithm::estimate_seconds), built
// from these as latency x steps + bytes / bandwidth for each kind of link
// it uses, plus the memory traffic of the shared-memory steps;
// docs/algorithms.md ("The cost model") states the formulas.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "collective/algorithm.h"
#include "collective/topology.h"
#include "core/request.h"

namespace collective::internal {

// ---- Constants. Each says what it stands for and why this value. ----------
// Measured values come from the development machine (2-core AMD EPYC VM,
// Open MPI 4.1.4 with vader and CMA); docs/performance.md has the
// runs. They need to order the algorithms correctly, not predict times.

// A flag hand-off between two ranks on their own cores: one cache line
// moving between cores plus the poll; an 8-byte shared-memory all-reduce
// at 2 ranks measured ~0.4 us with the call overhead below.
inline constexpr double kShmHandoffSeconds = 0.2e-6;
// The same when ranks outnumber processors, per rank per processing unit:
// the waiter yields and the writer must be scheduled; 8 bytes at 4 ranks on
// 2 cores (2 per unit) measured ~5.6 us.
inline constexpr double kShmHandoffOversubscribedSeconds = 2.5e-6;
// Streaming copy between memory and cache for one core (memcpy of buffers
// beyond the last-level cache, bytes copied): ~8 GB/s on the VM when quiet.
inline constexpr double kMemoryCopyBytesPerSecond = 8e9;
// Copy of data already in cache (the pieces of a round): ~20 GB/s.
inline constexpr double kCacheCopyBytesPerSecond = 20e9;
// Element-wise reduction of in-cache inputs (vectorized float32 add), bytes
// of input read: ~15 GB/s.
inline constexpr double kReduceBytesPerSecond = 15e9;
// Fixed cost of a call (validation, remembered selection, deadline): ~0.2 us.
inline constexpr double kCallSeconds = 0.2e-6;

// MPI point-to-point inside a node (Open MPI vader; CMA single copy above
// 32 KiB) through PeerExchange: the 8-byte ring (2 messages per rank)
// measured ~1.2 us at 2 ranks, so ~0.5 us a message; CMA copies measured
// ~2-2.5 GB/s on this VM (pinning pages is slow under virtualization).
inline constexpr double kLocalMpiLatencySeconds = 0.5e-6;
inline constexpr double kLocalMpiBytesPerSecond = 2.5e9;
// That rate is one rank's with a processor of its own: the copy is CPU work
// of the receiver (CMA) or of both sides (vader's copy in and out), so with
// more ranks than processors the copies of a step take turns and a step's
// bytes stretch by the ranks per processing unit, as node work does. 64 MiB
// at 8 ranks on 2 cores measured ring 239 ms against shared_memory 128 ms
// (p50), where the unstretched term predicted ring at 63 ms.
// With more ranks than processors every message waits for its receiver to
// be scheduled, per rank per processing unit: 8-byte recursive doubling at
// 4 ranks on 2 cores measured ~5 us a step, the ring 4-7 us.
inline constexpr double kLocalMpiOversubscribedLatencySeconds = 2.5e-6;

// Between nodes over TCP (Ethernet): kernel network stacks on both sides,
// ~25 us for a small message; 10 Gb/s = 1.25 GB/s for the node's NIC, the
// common data-centre Ethernet. The latency is always assumed (nothing
// reports it); the bandwidth only when some node's NICs report no link
// speed (network_model below).
inline constexpr double kEthernetLatencySeconds = 25e-6;
inline constexpr double kEthernetBytesPerSecond = 1.25e9;
// Nodes with an OpenFabrics (InfiniBand/RoCE) device: ~3 us and 100 Gb/s
// (12.5 GB/s), an EDR/HDR100 port; the model assumes MPI uses the fabric.
// As for Ethernet, the latency is always assumed and the bandwidth only
// when some node's OpenFabrics device reports no active port's rate.
inline constexpr double kFabricLatencySeconds = 3e-6;
inline constexpr double kFabricBytesPerSecond = 12.5e9;
// ---------------------------------------------------------------------------
// A node whose last-level cache size is unknown: the common size of a
// server socket's L3 share, so that only buffers clearly beyond any cache
// are modelled at memory speed.
inline constexpr double kUnknownCacheBytes = 16.0 * 1024 * 1024;

// The ways bytes move between ranks.
enum class LinkKind {
  kSharedMemory,  // flags and copies through a node segment
  kLocalMpi,      // MPI point-to-point between ranks of one node
  kNetwork,       // MPI point-to-point between nodes
};

struct LinkCost {
  double latency_seconds;   // per message or flag hand-off
  double bytes_per_second;  // per flow
};

// The link costs this model assumes for a topology (oversubscription, NIC
// kind and NIC link speeds change them).
LinkCost link_cost(LinkKind kind, const Topology& topology);

// The network between nodes as the model sees it: which kind of link MPI is
// taken to use, its cost, and whether the bandwidth is measured (every
// node's NICs of that kind report a link speed) or the assumed constant.
struct NetworkModel {
  const char* kind;  // "openfabrics", or "ethernet" (TCP over Ethernet/IPoIB)
  LinkCost cost;
  std::uint64_t link_bits_per_second;  // the speed the bandwidth comes from; 0: assumed
  int node_without_speed;              // when assumed, the first node lacking a speed; else -1
};
NetworkModel network_model(const Topology& topology);

// One phrase for logs and collective_info: "network openfabrics 12.5 GB/s
// measured from the link (slowest node's best: 100 Gb/s), latency 3 us
// assumed", or "network ethernet 1.25 GB/s assumed (node 1 (h2) reports no
// ethernet or ipoib link speed), latency 25 us assumed".
std::string describe_network(const Topology& topology);

// The shape of a call as the model sees it.
struct Shape {
  double bytes;             // one rank's buffer
  int ranks;                // p
  int nodes;                // m
  int per_node;             // most ranks on any node (L)
  int owners;               // fewest ranks on any node (k)
  double oversubscription;  // ranks per processing unit on the busiest node, at least 1
  double cache_bytes;       // smallest last-level cache of any node (0: unknown)
};

Shape shape_of(const Request& request, const Topology& topology);
// One node of `topology` alone, for a call of `bytes` per rank.
Shape node_shape(std::size_t bytes, const Topology& topology, int node);

// How many ring edges leave the busiest node: flows that share its NIC.
int ring_flows_per_node(const Topology& topology);
// One flag hand-off between two ranks of a node.
double handoff_seconds(const Shape& shape);
// Rounds of COLLECTIVE_SHM_SLOT_BYTES slots that `bytes` take.
double slot_rounds(double bytes);
// Work every rank of a node does at once: `streamed` bytes between memory
// and cache (memory speed once the node's buffers outgrow its cache),
// `cached` bytes copied inside the cache and `reduced` bytes of reduction
// input; ranks beyond the processing units take turns.
double node_work_seconds(const Shape& shape, double streamed, double cached, double reduced);
// One step of a flat algorithm moving `bytes` per rank: latency of the
// slowest link, and the slower of a local MPI copy (stretched by the ranks
// per processing unit: copies are CPU work) and the NIC shared by `flows`
// ranks of a node.
double flat_step_seconds(const Topology& topology, const Shape& shape, double bytes, int flows);
// The latency of one message: the network's when the call spans nodes.
double message_latency_seconds(const Topology& topology, const Shape& shape);
// Every rank sending `bytes` in all, spread evenly over the other p-1 ranks
// at once (all_to_all's exchanges): the slower of the local MPI copies
// (stretched by the ranks per processing unit) and the busiest node's
// off-node share through its NIC.
double spread_exchange_seconds(const Topology& topology, const Shape& shape, double bytes);

}  // namespace collective::internal
