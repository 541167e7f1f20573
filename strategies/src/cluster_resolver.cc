#include "collective/distribute/cluster_resolver.h"

#include <algorithm>
#include <cstring>

#include "collective/environment.h"
#include "collective/errors.h"

namespace collective::distribute {

std::vector<std::string> ClusterSpec::jobs() const {
  std::vector<std::string> names;
  for (const auto& [name, tasks] : jobs_) names.push_back(name);
  return names;
}

int ClusterSpec::num_tasks(const std::string& job) const {
  const auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

const std::string& ClusterSpec::task_address(const std::string& job, int task_index) const {
  const auto it = jobs_.find(job);
  if (it == jobs_.end() || task_index < 0 ||
      static_cast<std::size_t>(task_index) >= it->second.size()) {
    throw InvalidArgumentError("ClusterSpec::task_address", -1,
                               "no task " + std::to_string(task_index) + " in job \"" + job + "\"");
  }
  return it->second[static_cast<std::size_t>(task_index)];
}

ClusterResolver::~ClusterResolver() = default;

namespace {
// Host names are exchanged in fixed-size slots (POSIX HOST_NAME_MAX is 64;
// MPI_MAX_PROCESSOR_NAME is 256 in Open MPI).
constexpr std::size_t kHostSlot = 256;
}  // namespace

MPIClusterResolver::MPIClusterResolver(const Communicator& communicator) {
  Communicator comm = communicator;
  rank_ = comm.rank();
  const std::size_t size = static_cast<std::size_t>(comm.size());
  std::vector<std::uint8_t> mine(kHostSlot, 0);
  const std::string host = Environment::host_name();
  std::memcpy(mine.data(), host.data(), std::min(host.size(), kHostSlot - 1));
  std::vector<std::uint8_t> all(kHostSlot * size, 0);
  AllGatherOptions options;
  options.memory = MemoryKind::kHost;
  comm.all_gather(mine.data(), all.data(), kHostSlot, DataType::kUInt8, options);
  hosts_.reserve(size);
  for (std::size_t r = 0; r < size; ++r) {
    const char* slot = reinterpret_cast<const char*>(all.data() + r * kHostSlot);
    hosts_.emplace_back(slot, strnlen(slot, kHostSlot));
  }
  std::vector<std::string> distinct;
  local_rank_ = 0;
  local_size_ = 0;
  for (std::size_t r = 0; r < size; ++r) {
    if (std::find(distinct.begin(), distinct.end(), hosts_[r]) == distinct.end()) {
      distinct.push_back(hosts_[r]);
    }
    if (hosts_[r] == hosts_[static_cast<std::size_t>(rank_)]) {
      if (static_cast<int>(r) < rank_) ++local_rank_;
      ++local_size_;
    }
  }
  num_nodes_ = static_cast<int>(distinct.size());
  node_id_ = static_cast<int>(std::find(distinct.begin(), distinct.end(), hosts_[static_cast<std::size_t>(rank_)]) -
                                      distinct.begin());
}

ClusterSpec MPIClusterResolver::cluster_spec() const { return ClusterSpec({{"worker", hosts_}}); }

}  // namespace collective::distribute
