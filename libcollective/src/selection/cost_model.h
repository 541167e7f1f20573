// AUTO's cost model: the time an algorithm needs for a call, from the
// topology and the message size, as latency x steps + bytes / bandwidth for
// each kind of link the algorithm uses, plus the memory traffic of the
// shared-memory steps. Every constant is in cost_model.cc with its reason;
// docs/algorithms.md ("The cost model") states the formulas.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "collective/algorithm.h"
#include "collective/topology.h"
#include "core/request.h"

namespace collective::internal {

// The ways bytes move between ranks.
enum class LinkKind {
  kSharedMemory,  // flags and copies through a node segment
  kLocalMpi,      // MPI point-to-point between ranks of one node
  kNetwork,       // MPI point-to-point between nodes
};

struct LinkCost {
  double latency_seconds;    // per message or flag hand-off
  double bytes_per_second;   // per flow
};

// The link costs this model assumes for a topology (oversubscription, NIC
// kind and NIC link speeds change them).
LinkCost link_cost(LinkKind kind, const Topology& topology);

// The network between nodes as the model sees it: which kind of link MPI is
// taken to use, its cost, and whether the bandwidth is measured (every
// node's NICs of that kind report a link speed) or the assumed constant.
struct NetworkModel {
  const char* kind;                    // "openfabrics", or "ethernet" (TCP over Ethernet/IPoIB)
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

// Whether shared_memory should let every rank of `node` reduce the whole
// buffer itself (one hand-off a round) rather than split the work (two):
// when the duplicated reduction costs less than the hand-off it saves, and
// the buffer is within COLLECTIVE_SHM_SMALL_BYTES. Same on every rank.
bool shared_memory_redundant(std::size_t bytes, const Topology& topology, int node);

// Modelled seconds for `algorithm` serving `request` on `topology`, or
// nullopt when the model has no formula for it (mpi, nccl, and collectives
// other than all_reduce for the shared-memory algorithms).
std::optional<double> model_seconds(Algorithm algorithm, const Request& request,
                                    const Topology& topology);

}  // namespace collective::internal
