#include "collective/distribute/cluster_resolver.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "collective/environment.h"
#include "collective/errors.h"
#include "collective/in_tree/parameters.h"

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

namespace {

// COLLECTIVE_NUM_PS, by the library's parameter reader: decimal digits only
// (no sign, spaces or suffix), so "2x" or " 2" is an error, not a silent 2.
int num_ps_from_environment(int size) {
  const std::string operation = "MPIClusterResolver";
  std::optional<long long> count;
  try {
    count = integer_parameter("COLLECTIVE_NUM_PS", 0, 1 << 24);
  } catch (const InvalidArgumentError& error) {
    throw InvalidArgumentError(operation, -1,
                               error.cause() +
                                   " (the count of parameter servers, e.g. "
                                   "COLLECTIVE_NUM_PS=2)");
  }
  if (!count) {
    throw InvalidArgumentError(operation, -1,
                               "the parameter-server layout needs a ps count: pass num_ps or set "
                               "COLLECTIVE_NUM_PS (" +
                                   std::to_string(size) +
                                   " ranks: chief, ps "
                                   "tasks, at least one worker)");
  }
  return static_cast<int>(*count);
}

}  // namespace

MPIClusterResolver::MPIClusterResolver(const Communicator& communicator) { resolve(communicator); }

MPIClusterResolver::MPIClusterResolver(const Communicator& communicator,
                                       std::optional<int> num_ps) {
  const int size = communicator.size();
  const int ps = num_ps ? *num_ps : num_ps_from_environment(size);
  const std::string source = num_ps ? "num_ps" : "COLLECTIVE_NUM_PS";
  if (ps < 1 || ps > size - 2) {
    const int workers = size - 1 - ps;
    throw InvalidArgumentError(
        "MPIClusterResolver", communicator.rank(),
        "bad parameter-server layout: " + std::to_string(size) + " ranks = 1 chief + " + source +
            " " + std::to_string(ps) + " ps + " + std::to_string(workers) +
            " workers; it needs 1 <= ps <= ranks - 2 = " + std::to_string(size - 2) +
            " so that at least one worker is left (launch with at least " +
            std::to_string(std::max(ps, 1) + 2) + " ranks)");
  }
  has_chief_ = 1;
  num_ps_ = ps;
  resolve(communicator);
  if (rank_ == 0) {
    task_type_ = "chief";
    task_id_ = 0;
  } else if (rank_ <= num_ps_) {
    task_type_ = "ps";
    task_id_ = rank_ - 1;
  } else {
    task_type_ = "worker";
    task_id_ = rank_ - 1 - num_ps_;
  }
}

int MPIClusterResolver::rank_of(const std::string& task_type, int task_id) const {
  const int count = has_chief_ ? (task_type == "chief"    ? 1
                                  : task_type == "ps"     ? num_ps_
                                  : task_type == "worker" ? num_workers()
                                                          : 0)
                               : (task_type == "worker" ? num_workers() : 0);
  if (task_id < 0 || task_id >= count) {
    throw InvalidArgumentError(
        "MPIClusterResolver::rank_of", rank_,
        "no task (\"" + task_type + "\", " + std::to_string(task_id) + ") in this cluster");
  }
  if (!has_chief_) return task_id;
  if (task_type == "chief") return 0;
  if (task_type == "ps") return 1 + task_id;
  return 1 + num_ps_ + task_id;
}

void MPIClusterResolver::resolve(const Communicator& communicator) {
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
  task_id_ = rank_;
  const Topology& topology = comm.topology();
  num_accelerators_ = static_cast<int>(topology.node(topology.node_of(rank_)).gpus.size());
  node_id_ = static_cast<int>(
      std::find(distinct.begin(), distinct.end(), hosts_[static_cast<std::size_t>(rank_)]) -
      distinct.begin());
}

ClusterSpec MPIClusterResolver::cluster_spec() const {
  if (!has_chief_) return ClusterSpec({{"worker", hosts_}});
  const auto ps_end = hosts_.begin() + 1 + num_ps_;
  return ClusterSpec({{"chief", {hosts_.front()}},
                      {"ps", std::vector<std::string>(hosts_.begin() + 1, ps_end)},
                      {"worker", std::vector<std::string>(ps_end, hosts_.end())}});
}

}  // namespace collective::distribute
