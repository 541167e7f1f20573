#include "algorithms/nccl/nccl_node_layout.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "algorithms/nccl/nccl_bootstrap.h"
#include "collective/errors.h"
#include "core/env_params.h"
#include "core/mpi_check.h"

namespace collective::internal {
namespace {

// COLLECTIVE_NCCL_RANKS_PER_NODE; 0 when unset.
int ranks_per_node_override() { return env_params().nccl_ranks_per_node; }

}  // namespace

NodeLayout node_layout_from_hosts(const std::vector<std::string>& hosts, int rank) {
  NodeLayout layout;
  layout.world_size = static_cast<int>(hosts.size());
  std::map<std::string, int> node_of_host;  // host -> node index
  std::vector<int> ranks_on_node;
  for (int r = 0; r < layout.world_size; ++r) {
    const auto [it, inserted] = node_of_host.emplace(hosts[static_cast<std::size_t>(r)],
                                                     static_cast<int>(ranks_on_node.size()));
    if (inserted) ranks_on_node.push_back(0);
    const int node = it->second;
    if (r == rank) {
      layout.node_index = node;
      layout.local_rank = ranks_on_node[static_cast<std::size_t>(node)];
    }
    ++ranks_on_node[static_cast<std::size_t>(node)];
  }
  layout.node_count = static_cast<int>(ranks_on_node.size());
  layout.local_size = ranks_on_node[static_cast<std::size_t>(layout.node_index)];
  layout.min_local_size = *std::min_element(ranks_on_node.begin(), ranks_on_node.end());
  layout.max_local_size = *std::max_element(ranks_on_node.begin(), ranks_on_node.end());
  return layout;
}

NodeLayout probe_node_layout(MPI_Comm comm, const std::string& host, const Request& request,
                             int rank) {
  int size = 1;
  int comm_rank = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size", request.label(), rank);
  check_mpi(MPI_Comm_rank(comm, &comm_rank), "MPI_Comm_rank", request.label(), rank);
  constexpr std::size_t kNameBytes = MPI_MAX_PROCESSOR_NAME;
  std::vector<char> mine(kNameBytes, '\0');
  std::memcpy(mine.data(), host.data(), std::min(host.size(), kNameBytes - 1));
  // Kept alive past a timeout, when MPI may still write it (see wait_for_mpi).
  auto all = std::make_unique<std::vector<char>>(kNameBytes * static_cast<std::size_t>(size), '\0');
  auto own = std::make_unique<std::vector<char>>(std::move(mine));
  MPI_Request pending = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallgather(own->data(), static_cast<int>(kNameBytes), MPI_CHAR, all->data(),
                           static_cast<int>(kNameBytes), MPI_CHAR, comm, &pending),
            "MPI_Iallgather", request.label(), rank);
  try {
    wait_for_mpi(pending, request, rank, "every rank's host name (MPI_Iallgather)");
  } catch (...) {
    (void)all.release();
    (void)own.release();
    throw;
  }
  std::vector<std::string> hosts;
  hosts.reserve(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    const char* name = all->data() + static_cast<std::size_t>(r) * kNameBytes;
    hosts.emplace_back(name, strnlen(name, kNameBytes));
  }
  // The gather still ran: it is also the proof that every rank is here.
  if (const int k = ranks_per_node_override(); k > 0) {
    for (int r = 0; r < size; ++r)
      hosts[static_cast<std::size_t>(r)] = "node" + std::to_string(r / k);
  }
  return node_layout_from_hosts(hosts, comm_rank);
}

}  // namespace collective::internal
