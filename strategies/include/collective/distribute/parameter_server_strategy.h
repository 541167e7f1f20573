// Parameter-server training (tf.distribute.experimental.ParameterServerStrategy)
// for one SPMD program launched by mpirun. MPIClusterResolver(comm, num_ps)
// gives the roles: rank 0 is the chief (the coordinator), ranks 1..P the ps
// tasks, the rest the workers.
//
//   RemoteFunctions functions;                     // on every rank, same order
//   auto step = functions.add("train_step", train_step);
//   MPIClusterResolver resolver(world, 2);
//   ParameterServerStrategy strategy(resolver, functions);  // ps, workers: serve here
//   if (!strategy.is_coordinator()) return 0;      // the cluster has shut down
//   auto scope = strategy.scope();
//   Variable w(Tensor(DataType::kFloat32, {1024, 8}));   // lives on a ps task
//   ClusterCoordinator coordinator(strategy);
//   coordinator.schedule(step, {w, ...});
//   coordinator.join();
//
// What runs where. On a ps rank the constructor serves variables (create,
// read, assign, assign_add, assign_sub, SGD steps) until the chief shuts the
// cluster down, then returns. On a worker rank the constructor runs the
// closures the coordinator sends (each a registered function with its
// arguments), one at a time, in the order it receives them, until shutdown,
// then returns. On the chief the constructor starts a background thread
// (the dispatcher) and returns at once; the chief's code goes on as the
// coordinator. The chief's strategy's destructor shuts the cluster down.
// Servers stop with UnavailableError when the chief stops answering.
//
// Asynchronous: every read or update of a variable is one request to the
// ps task that holds it (or one per shard), applied there atomically per
// variable (per shard) in arrival order; workers never wait for each other.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collective/distribute/cluster_coordinator.h"
#include "collective/distribute/cluster_resolver.h"
#include "collective/distribute/strategy.h"
#include "collective/distribute/tensor.h"

namespace collective::distribute {

// Number of shards for a variable of this shape and dtype, split along the
// first axis (tf.distribute.experimental.partitioners).
using VariablePartitioner = std::function<int(const Shape& shape, DataType dtype)>;

// Exactly num_shards shards (fewer when the first dimension is smaller).
VariablePartitioner FixedShardsPartitioner(int num_shards);
// As many shards as keep each at least min_shard_bytes, at most max_shards
// (TF's defaults: 256 KiB, 1 shard).
VariablePartitioner MinSizePartitioner(std::int64_t min_shard_bytes = 256 << 10,
                                       int max_shards = 1);
// As few shards as keep each at most max_shard_bytes, at most max_shards
// (0: no limit).
VariablePartitioner MaxSizePartitioner(std::int64_t max_shard_bytes, int max_shards = 0);

struct ParameterServerOptions {
  // Shards large variables along their first axis across ps tasks; unset:
  // one piece per variable.
  VariablePartitioner variable_partitioner;
  // How long a peer may stay silent (no heartbeat, no reply) before it is
  // declared failed: a worker's closures are rescheduled, a ps failure ends
  // schedule/join with UnavailableError. Unset: COLLECTIVE_PS_FAILURE_TIMEOUT
  // (seconds), else 30 s.
  std::optional<double> failure_timeout_seconds;
  // Closures sent ahead to a worker (run one at a time there, in order);
  // more hides the round trip of small closures.
  int closures_in_flight_per_worker = 8;
  // The MPI communicator of the cluster as a Fortran handle
  // (MPI_Comm_c2f(comm)); it must be the resolver's. Unset: MPI_COMM_WORLD.
  // The strategy duplicates it.
  std::optional<int> mpi_communicator;
  // Whether a variable payload above 64 KiB (an update's value, a read's
  // result) between a chief or worker and a ps task on the same node
  // (MPI_COMM_TYPE_SHARED) is copied through a shared-memory segment the
  // two share instead of being sent as an MPI message; requests to ps
  // tasks on other nodes always travel as messages. Unset:
  // COLLECTIVE_PS_SHARED_MEMORY (0 or 1), else on.
  std::optional<bool> same_node_shared_memory;
  // Compute replicas in each process (CPU devices 0..K-1, one thread each,
  // as MirroredStrategy runs them): inside a closure,
  // args.strategy().run(fn) runs fn on every local replica; their
  // variable updates and apply_gradients are reduced across the local
  // replicas synchronously (the variable's aggregation; gradients summed)
  // and pushed to the ps once. Workers never wait for each other.
  int num_local_replicas = 1;
};

namespace detail {
struct PsCluster;
}

// Where a piece of a variable lives: rows [row_begin, row_begin + rows) of
// its first axis (the whole variable when it has one shard) on ps `ps`.
struct VariableShard {
  int ps = 0;
  std::int64_t row_begin = 0;
  std::int64_t rows = 0;
};

class ParameterServerStrategy final : public Strategy {
 public:
  // Collective over the resolver's communicator: every rank must pass
  // registries with the same function names in the same order
  // (MismatchError naming the first difference). The resolver must use the
  // parameter-server layout. On ps and worker ranks this serves until the
  // cluster shuts down (see the top of this file).
  ParameterServerStrategy(const MPIClusterResolver& resolver, const RemoteFunctions& functions,
                          ParameterServerOptions options = {});
  ~ParameterServerStrategy() override;

  // True on the chief: the code after the constructor coordinates.
  bool is_coordinator() const;
  const MPIClusterResolver& resolver() const;
  int num_ps() const;
  int num_workers() const;

  // Shuts the cluster down (also done by the destructor): workers finish
  // the closure they run and return, then the ps tasks return. Waits at
  // most the failure timeout for each. Chief only; later calls do nothing.
  void shutdown();

  // The shards of a variable created in this strategy's scope, in row order.
  std::vector<VariableShard> shards(const Variable& variable) const;

  detail::PsCluster& cluster() const { return *cluster_; }

 private:
  std::shared_ptr<detail::PsCluster> cluster_;
};

}  // namespace collective::distribute
