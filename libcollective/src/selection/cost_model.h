// AUTO's cost model: the time an algorithm needs for a call, from the
// topology and the message size, as latency x steps + bytes / bandwidth for
// each kind of link the algorithm uses, plus the memory traffic of the
// shared-memory steps. Every constant is in cost_model.cc with its reason;
// docs/topology.md derives the formulas.
#pragma once

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

// The link costs this model assumes for a topology (oversubscription and
// NIC kind change them).
LinkCost link_cost(LinkKind kind, const Topology& topology);

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
