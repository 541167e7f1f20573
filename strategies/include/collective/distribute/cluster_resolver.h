// Who is in the cluster and which task this process is
// (tf.distribute.cluster_resolver). Workers are started by mpirun, so the
// cluster comes from MPI instead of TF_CONFIG. Two layouts:
//  - all workers (MultiWorkerMirroredStrategy): one task of type "worker"
//    per rank, task_id = rank, and rank 0 is the chief;
//  - parameter servers (ParameterServerStrategy): rank 0 is the "chief"
//    (the coordinator), ranks 1..P are "ps" 0..P-1 and the remaining ranks
//    are "worker" 0..W-1 (the order TF's Slurm resolver uses).
#pragma once

#include <map>
#include <optional>
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
//
// num_accelerators() is the number of GPUs the library's topology sees on
// this rank's node (0 on a machine without any).
class MPIClusterResolver final : public ClusterResolver {
 public:
  // The all-workers layout.
  explicit MPIClusterResolver(const Communicator& communicator);

  // The parameter-server layout with num_ps parameter servers; std::nullopt
  // reads COLLECTIVE_NUM_PS (a decimal integer, nothing else). Needs
  // 1 <= num_ps <= size - 2 (a chief and at least one worker besides);
  // anything else raises InvalidArgumentError naming the counts, on every
  // rank alike, before any communication.
  MPIClusterResolver(const Communicator& communicator, std::optional<int> num_ps);

  ClusterSpec cluster_spec() const override;
  // "worker"; in the parameter-server layout "chief", "ps" or "worker".
  std::string task_type() const override { return task_type_; }
  // The index within task_type()'s job (the rank in the all-workers layout).
  int task_id() const override { return task_id_; }
  int num_accelerators() const override { return num_accelerators_; }

  int rank() const { return rank_; }
  // Tasks of type "worker" (every rank in the all-workers layout).
  int num_workers() const { return static_cast<int>(hosts_.size()) - has_chief_ - num_ps_; }
  // Tasks of type "ps" (0 in the all-workers layout).
  int num_ps() const { return num_ps_; }
  bool parameter_server_layout() const { return has_chief_ != 0; }
  // Rank of a task: ("chief", 0) -> 0, ("ps", i) -> 1 + i, ("worker", i) ->
  // 1 + P + i (i in the all-workers layout); InvalidArgumentError otherwise.
  int rank_of(const std::string& task_type, int task_id) const;
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  // Index of this rank's host among the distinct hosts, in rank order.
  int node_id() const { return node_id_; }
  int num_nodes() const { return num_nodes_; }
  const std::string& host() const { return hosts_[static_cast<std::size_t>(rank_)]; }
  // The chief (task 0) saves checkpoints and writes summaries.
  bool is_chief() const { return rank_ == 0; }

 private:
  void resolve(const Communicator& communicator);

  int rank_ = 0;
  int has_chief_ = 0;  // 1 in the parameter-server layout
  int num_ps_ = 0;
  std::string task_type_ = "worker";
  int task_id_ = 0;
  int num_accelerators_ = 0;
  int local_rank_ = 0;
  int local_size_ = 1;
  int node_id_ = 0;
  int num_nodes_ = 1;
  std::vector<std::string> hosts_;
};

}  // namespace collective::distribute
