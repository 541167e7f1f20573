// The state every strategy kind shares (StrategyExtended's implementation).
// The kinds differ only in configuration: how many local replicas, whether
// variables are mirrored, which cross-device ops, and whether there is a
// communicator to other workers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collective/communicator.h"
#include "collective/distribute/cluster_resolver.h"
#include "collective/distribute/communication_options.h"
#include "collective/distribute/cross_device_ops.h"
#include "collective/distribute/tensor.h"
#include "collective/distribute/values.h"
#include "base/replica_threads.h"
#include "base/run_gate.h"

namespace collective::distribute {
class ReplicaContext;
class Strategy;
}  // namespace collective::distribute

namespace collective::distribute::detail {

struct VariableState;
class WorkerCalls;

struct StrategyImpl {
  // Configuration, fixed at construction.
  std::string name;              // "MirroredStrategy"
  std::uint64_t serial = 0;      // process-unique, for messages and ownership
  Strategy* strategy = nullptr;  // back pointer, set by Strategy's constructor
  bool mirrored_variables = false;
  std::vector<std::string> worker_devices;
  std::vector<std::string> parameter_devices;
  int num_local_replicas = 1;
  int num_workers = 1;
  int worker_index = 0;
  CommunicationOptions communication_options;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<CrossDeviceOps> cross_device_ops;

  // Multi-worker only: every cross-worker call goes through it (tagged
  // with what it is, serialized by its lock), shared with the strategy's
  // CollectiveAllReduce.
  std::shared_ptr<WorkerCalls> worker_calls;
  std::unique_ptr<MPIClusterResolver> cluster_resolver;

  // MultiWorkerMirroredStrategy: a new variable takes the chief's (worker
  // 0's) initial value, broadcast at creation, as tf.distribute does.
  bool broadcast_initial_values = false;

  // Set while a StrategyExtended::colocate_vars_with scope lives: new
  // variables go where this one is (parameter-server strategies).
  std::shared_ptr<const VariableState> colocate_with;

  // Parameter-server strategies: places a new variable's value on the ps
  // tasks (sets VariableState::remote). Unset elsewhere.
  std::function<void(VariableState&, const Tensor& initial_value)> place_variable;

  // One context per local replica, made on the first run() and reused, so
  // a context kept past its run() is still an object that can say so.
  std::vector<std::unique_ptr<ReplicaContext>> replica_contexts;

  // Replica threads (when num_local_replicas > 1).
  std::unique_ptr<ReplicaThreads> threads;
  // Whether a run() is in progress: refuses a concurrent second one, and
  // lets the destructor end it and wait for it (run_gate.h). Shared with
  // the run, which may outlive the rest of this state by its last lines.
  std::shared_ptr<RunGate> run_gate = std::make_shared<RunGate>();

  // Elastic training (CommunicationOptions::elastic, MultiWorkerMirrored-
  // Strategy): a step that lost a worker is redone from the variables'
  // values when it began, on the global batch cut anew over the survivors.
  struct ElasticState {
    std::mutex mutex;  // guards variables
    std::vector<std::weak_ptr<VariableState>> variables;
    // The last global batch a distributed iterator cut (by element), the
    // first bytes of each local replica's part as handed out (how run()
    // knows its argument), and the parts cut anew for a redone step.
    std::vector<Tensor> global_batch;
    std::vector<const void*> part_keys;
    std::vector<std::vector<Tensor>> recut;
    bool recut_active = false;
    // How many times the workers shrank, now and when global_batch was cut:
    // a batch cut for more workers is cut anew before a step runs on it.
    std::uint64_t membership = 0;
    std::uint64_t batch_membership = 0;
    int steps_redone = 0;
  };
  std::unique_ptr<ElasticState> elastic_state;  // set: the strategy is elastic

  int num_replicas_in_sync() const { return num_workers * num_local_replicas; }
  // "MirroredStrategy #2".
  std::string label() const;
  // The rank to put in errors: the worker index.
  int error_rank() const { return worker_index; }

  // Reductions of distributed values (validated; cross-replica or combine).
  std::vector<Tensor> batch_reduce(ReduceOp op, const std::vector<PerReplica<Tensor>>& values);
  // The same on tensors the caller keeps (values[v][r]: local replica r's
  // value v): validated, then reduced without copying them in.
  std::vector<Tensor> batch_reduce_views(ReduceOp op,
                                         const std::vector<std::vector<const Tensor*>>& values);
  // One value, without copying it (validated).
  Tensor reduce_one(ReduceOp op, const PerReplica<Tensor>& value);
  // StrategyExtended::reduce_to: reduce_one in the cross-replica context
  // (InvalidArgumentError in a replica context), as that call's purpose.
  Tensor reduce_to(ReduceOp op, const PerReplica<Tensor>& value);
  // Cross-replica operations refuse to run inside a replica function.
  void require_cross_replica(const std::string& operation) const;
  // Every replica's value of every worker concatenated along axis
  // (replica_gather.h: the rules, checked alike on every worker).
  Tensor gather(const PerReplica<Tensor>& value, int axis, const std::string& operation);
  // The same with each local replica's value and axis as it passed them
  // (ReplicaContext.all_gather), read in place.
  Tensor gather_views(std::span<const Tensor* const> values, std::span<const int> axes,
                      const std::string& operation);
  // Worker 0's value on every worker (one broadcast), after checking that
  // every worker passes the same dtype and shape (MismatchError naming
  // `what` otherwise, on every worker). value on one worker: returned as is.
  Tensor broadcast_from_chief(const Tensor& value, const std::string& what,
                              const std::string& operation);
  // True when any worker passes true (one all-reduce across workers).
  bool any_worker(bool local, const std::string& operation);

  // Fills the configuration common to all kinds (serial, threads, ops).
  void finish_setup();
};

// Constructs the configuration of each kind (in the kinds' sources).
std::unique_ptr<StrategyImpl> make_default_impl();

// Validates that every value has num_local_replicas entries of one dtype and
// shape; InvalidArgumentError naming operation, value and replica.
void validate_per_replica(const StrategyImpl& impl, const PerReplica<Tensor>& value,
                          const std::string& operation, std::size_t value_index);

// Normalizes a possibly negative axis for a tensor of rank `rank`.
int normalize_axis(int axis, int rank, const std::string& operation, int error_rank);

}  // namespace collective::distribute::detail
