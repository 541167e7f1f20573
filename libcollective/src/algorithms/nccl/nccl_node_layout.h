// Which ranks share a node, as the NCCL algorithm's hierarchical variant
// needs it: nodes are told apart by MPI_Get_processor_name.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "core/request.h"

namespace collective::internal {

struct NodeLayout {
  int world_size = 1;
  int node_count = 1;
  int node_index = 0;  // nodes are numbered in order of their lowest rank
  int local_rank = 0;  // position among the ranks of this node, by rank
  int local_size = 1;  // ranks on this node
  int min_local_size = 1;
  int max_local_size = 1;

  bool uniform() const { return min_local_size == max_local_size; }
};

// The layout seen by `rank`, given every rank's host name in rank order.
NodeLayout node_layout_from_hosts(const std::vector<std::string>& hosts, int rank);

// Collective over `comm`: gathers the processor names (MPI_Iallgather,
// bounded by request.deadline) and computes the layout. When
// COLLECTIVE_NCCL_RANKS_PER_NODE=K is set, every K consecutive ranks count
// as one node instead, whatever their hosts: a way to run the
// hierarchical variant on one machine with several GPUs (tests, diagnosis).
NodeLayout probe_node_layout(MPI_Comm comm, const std::string& host, const Request& request,
                             int rank);

}  // namespace collective::internal
