// Gives a new communicator its Topology and the node groups built from it.
// Collective over the communicator: every rank calls it when the
// Communicator is created (world, from_mpi, split).
//
//  1. Each rank describes its machine with hwloc (machine_probe.h).
//  2. MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) tells which ranks share a
//     machine; the descriptions are all-gathered, so every rank builds the
//     same Topology (a hash of it is compared to make sure). The records
//     carry each rank's COLLECTIVE_* parameters that must agree, which are
//     compared here too (core/agreed_params.h).
//  3. COLLECTIVE_TOPOLOGY_FILE, when set, replaces the machine descriptions
//     and may split real nodes into smaller virtual ones (docs/topology.md).
//  4. COLLECTIVE_TOPOLOGY_DUMP, when set, receives the result (once per job).
//     Every rank also loads COLLECTIVE_RULES_FILE here, so that a bad or
//     differing rules file fails on all ranks at once.
//  5. The node communicator and, across nodes, the communicator of ranks
//     sharing a local rank are split off for the algorithms.
#pragma once

#include <vector>

#include "collective/topology.h"
#include "core/communicator_state.h"

namespace collective::internal {

// Throws InvalidArgumentError (a bad topology file, on every rank alike) or
// CommunicationError (an MPI failure).
void attach_topology(CommunicatorState& state, const char* operation);

// For Communicator::shrink: the survivors' topology is the failed
// communicator's `before` without the failed ranks (`members`: the ranks of
// `before` that make `state`, in its order), derived with no probe and no
// exchange (steps 1-4 were made, and agreed, for `before`); step 5 as above.
void attach_survivors_topology(CommunicatorState& state, const Topology& before,
                               const std::vector<int>& members, const char* operation);

}  // namespace collective::internal
