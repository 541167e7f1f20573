// Who is in the cluster and which task this process is
// (tf.distribute.cluster_resolver). Workers are started by mpirun, so the
// cluster comes from MPI instead of TF_CONFIG: one task of type "worker" per
// rank, task_id = rank, and rank 0 is the chief.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "collective/communicator.h"

namespace collective::distribute {

// Jobs and their task addresses: {"worker": [host of task 0, host of task 1, ...]}.
class ClusterSpec {
 public:
  ClusterSpec() = default;
  explicit ClusterSpec(std::map<std::string, std::vector<std::string>> jobs)
      : jobs_(std::move(jobs)) {}

  std::vector<std::string> jobs() const;
  // Number of tasks of the job; 0 for an unknown job.
  int num_tasks(const std::string& job) const;
  // Address of a task; InvalidArgumentError for an unknown job or index.
  const std::string& task_address(const std::string& job, int task_index) const;
  const std::map<std::string, std::vector<std::string>>& as_map() const { return jobs_; }

 private:
  std::map<std::string, std::vector<std::string>> jobs_;
};

class ClusterResolver {
 public:
  virtual ~ClusterResolver();
  virtual ClusterSpec cluster_spec() const = 0;
  virtual std::string task_type() const = 0;
  virtual int task_id() const = 0;
  // Accelerators per task visible to this process (0 on a CPU-only build).
  virtual int num_accelerators() const = 0;
};

// Resolves the cluster from an MPI communicator. Construction is collective
// (every rank gathers every rank's host name). The node of a rank is its host
// name; local_rank counts lower ranks on the same host, which is what Open MPI
// exports as OMPI_COMM_WORLD_LOCAL_RANK when the communicator is the world.
class MPIClusterResolver final : public ClusterResolver {
 public:
  explicit MPIClusterResolver(const Communicator& communicator);

  ClusterSpec cluster_spec() const override;
  std::string task_type() const override { return "worker"; }
  int task_id() const override { return rank_; }
  int num_accelerators() const override { return 0; }

  int rank() const { return rank_; }
  int num_workers() const { return static_cast<int>(hosts_.size()); }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  // Index of this rank's host among the distinct hosts, in rank order.
  int node_id() const { return node_id_; }
  int num_nodes() const { return num_nodes_; }
  const std::string& host() const { return hosts_[static_cast<std::size_t>(rank_)]; }
  // The chief (task 0) saves checkpoints and writes summaries.
  bool is_chief() const { return rank_ == 0; }

 private:
  int rank_ = 0;
  int local_rank_ = 0;
  int local_size_ = 1;
  int node_id_ = 0;
  int num_nodes_ = 1;
  std::vector<std::string> hosts_;
};

}  // namespace collective::distribute
