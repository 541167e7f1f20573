// How and where the benchmark ran, for the report header: version and git
// revision, ranks and nodes, and each rank's host and CPU binding.
#pragma once

#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

namespace collective::bench {

struct RankPlacement {
  int rank = 0;
  int node = 0;        // index of the node (in order of its lowest rank)
  int local_rank = 0;  // rank among the ranks of its node
  long pid = 0;
  std::string host;
  std::string cpus;  // sched_getaffinity as a list: "0-1", "0,2,4-7"
  int online_cpus = 0;
};

struct RunInfo {
  std::string version;
  std::string git_revision;
  bool with_nccl = false;
  std::string mpi_library;  // first line of MPI_Get_library_version
  // COLLECTIVE_* environment variables of rank 0 (they change what runs).
  std::vector<std::pair<std::string, std::string>> environment;
  std::string started_utc;  // ISO 8601
  std::string command_line;
  int ranks = 1;
  int nodes = 1;
  int min_ranks_per_node = 1;
  int max_ranks_per_node = 1;
  std::vector<RankPlacement> placements;  // every rank, in rank order
};

// Collective over `comm`: every rank gets the whole picture.
RunInfo gather_run_info(MPI_Comm comm, const std::string& command_line);

// A CPU set as a compact list ("0-3,8").
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace collective::bench
