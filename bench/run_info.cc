#include "run_info.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <ctime>

#include "collective/version.h"

namespace collective::bench {
namespace {

// One rank's record as it travels in MPI_Allgather: fixed size.
struct PlacementRecord {
  int node = 0;
  int local_rank = 0;
  long pid = 0;
  int online_cpus = 0;
  std::array<char, 256> host{};
  std::array<char, 512> cpus{};
};

std::string affinity_list() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "unknown";
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return format_cpu_list(cpus);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

std::string mpi_library_first_line() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, static_cast<std::size_t>(length));
  const auto end = version.find_first_of("\n,");
  return version.substr(0, end);
}

template <std::size_t N>
void copy_text(std::array<char, N>& target, const std::string& text) {
  std::strncpy(target.data(), text.c_str(), N - 1);
  target[N - 1] = '\0';
}

}  // namespace

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string list;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!list.empty()) list += ',';
    list += std::to_string(cpus[i]);
    if (j > i) list += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return list.empty() ? "none" : list;
}

RunInfo gather_run_info(MPI_Comm comm, const std::string& command_line) {
  RunInfo info;
  info.version = version_string();
  info.git_revision = git_revision();
  info.with_nccl = built_with_nccl();
  info.mpi_library = mpi_library_first_line();
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const std::string entry = *variable;
    const auto equals = entry.find('=');
    if (entry.rfind("COLLECTIVE_", 0) == 0 && equals != std::string::npos) {
      info.environment.emplace_back(entry.substr(0, equals), entry.substr(equals + 1));
    }
  }
  std::sort(info.environment.begin(), info.environment.end());
  info.started_utc = utc_now();
  info.command_line = command_line;

  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &info.ranks);

  // Nodes as MPI sees them: ranks that can share memory.
  MPI_Comm node_comm = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm);
  int local_rank = 0;
  int local_size = 1;
  MPI_Comm_rank(node_comm, &local_rank);
  MPI_Comm_size(node_comm, &local_size);
  // Number the nodes by their leaders (local rank 0) in rank order.
  MPI_Comm leaders = MPI_COMM_NULL;
  MPI_Comm_split(comm, local_rank == 0 ? 0 : MPI_UNDEFINED, rank, &leaders);
  int node = 0;
  if (leaders != MPI_COMM_NULL) {
    MPI_Comm_rank(leaders, &node);
    MPI_Comm_free(&leaders);
  }
  MPI_Bcast(&node, 1, MPI_INT, 0, node_comm);
  MPI_Comm_free(&node_comm);

  PlacementRecord mine;
  mine.node = node;
  mine.local_rank = local_rank;
  mine.pid = static_cast<long>(getpid());
  mine.online_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  char host[MPI_MAX_PROCESSOR_NAME];
  int host_length = 0;
  MPI_Get_processor_name(host, &host_length);
  copy_text(mine.host, std::string(host, static_cast<std::size_t>(host_length)));
  copy_text(mine.cpus, affinity_list());

  std::vector<PlacementRecord> all(static_cast<std::size_t>(info.ranks));
  MPI_Allgather(&mine, sizeof(PlacementRecord), MPI_BYTE, all.data(), sizeof(PlacementRecord),
                MPI_BYTE, comm);

  std::vector<int> ranks_on_node;
  for (int r = 0; r < info.ranks; ++r) {
    const PlacementRecord& record = all[static_cast<std::size_t>(r)];
    RankPlacement placement;
    placement.rank = r;
    placement.node = record.node;
    placement.local_rank = record.local_rank;
    placement.pid = record.pid;
    placement.online_cpus = record.online_cpus;
    placement.host = record.host.data();
    placement.cpus = record.cpus.data();
    info.placements.push_back(placement);
    if (static_cast<std::size_t>(record.node) >= ranks_on_node.size()) {
      ranks_on_node.resize(static_cast<std::size_t>(record.node) + 1, 0);
    }
    ++ranks_on_node[static_cast<std::size_t>(record.node)];
  }
  info.nodes = static_cast<int>(ranks_on_node.size());
  info.min_ranks_per_node = info.ranks;
  info.max_ranks_per_node = 0;
  for (int count : ranks_on_node) {
    info.min_ranks_per_node = std::min(info.min_ranks_per_node, count);
    info.max_ranks_per_node = std::max(info.max_ranks_per_node, count);
  }
  return info;
}

}  // namespace collective::bench
