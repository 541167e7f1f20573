// The Topology of a communicator made of some of another's ranks, derived
// from the other's without probing or gathering anything: what
// Communicator::shrink gives the survivors, whose machines are the ones the
// failed communicator already described and agreed on.
#pragma once

#include <vector>

#include "collective/topology.h"

namespace collective::internal {

// `members`: the ranks of `before` that make the new communicator, in its
// rank order (ascending). Nodes left without a member are dropped; the rest
// keep their description, with their ranks renumbered.
Topology survivors_topology(const Topology& before, const std::vector<int>& members);

}  // namespace collective::internal
