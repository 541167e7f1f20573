// Scheduling functions on the workers of a ParameterServerStrategy
// (tf.distribute.experimental.coordinator.ClusterCoordinator).
//
// C++ closures cannot travel between processes, so the functions a worker
// runs are registered by name, in the same order, on every rank, before the
// strategy is constructed (RemoteFunctions); schedule() sends the function's
// index and its arguments (tensors, variables, per-worker iterators).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "collective/distribute/dataset.h"
#include "collective/distribute/errors.h"
#include "collective/distribute/input_context.h"
#include "collective/distribute/tensor.h"
#include "collective/distribute/variable.h"
#include "collective/errors.h"

namespace collective::distribute {

class ParameterServerStrategy;
class Strategy;

// One worker's iterator over its own dataset, made from
// ClusterCoordinator::create_per_worker_dataset (tf's PerWorkerIterator).
struct PerWorkerIterator {
  std::uint64_t coordinator_serial = 0;
  std::uint32_t dataset_function = 0;
  std::uint64_t dataset_id = 0;
  std::uint64_t iterator_id = 0;
};

// What schedule() can pass to a function.
using ClosureArgument = std::variant<Tensor, Variable, PerWorkerIterator>;

// The arguments as the worker sees them. Accessors raise
// InvalidArgumentError naming the function, the index and the kinds.
class ClosureArguments {
 public:
  ClosureArguments(std::string function, int worker_index, int num_workers);
  std::size_t size() const { return kinds_.size(); }
  const Tensor& tensor(std::size_t index) const;
  Variable variable(std::size_t index) const;
  // This worker's iterator for that argument (one per worker and
  // PerWorkerIterator, kept across closures).
  Dataset::Iterator& iterator(std::size_t index) const;
  int worker_index() const { return worker_index_; }
  int num_workers() const { return num_workers_; }
  const std::string& function() const { return function_; }
  // The worker's ParameterServerStrategy: strategy().run(fn) runs fn on
  // each of the worker's local replicas (ParameterServerOptions::
  // num_local_replicas), whose updates are reduced across them,
  // synchronously, before one push per variable to its ps.
  // InvalidArgumentError when the arguments were made without one.
  Strategy& strategy() const;

  // Internal: filled by the worker.
  void set_strategy(Strategy* strategy) { strategy_ = strategy; }
  void add_tensor(Tensor tensor);
  void add_variable(Variable variable);
  void add_iterator(Dataset::Iterator* iterator);

 private:
  enum class Kind { kTensor, kVariable, kIterator };
  void check(std::size_t index, Kind kind) const;
  std::string function_;
  int worker_index_;
  int num_workers_;
  Strategy* strategy_ = nullptr;
  std::vector<Kind> kinds_;
  std::vector<Tensor> tensors_;
  std::vector<Variable> variables_;
  std::vector<Dataset::Iterator*> iterators_;
  std::vector<std::size_t> slots_;
};

// A function workers run: its result comes back through RemoteValue::fetch
// (return Tensor() when there is nothing to return).
using WorkerFunction = std::function<Tensor(ClosureArguments&)>;
// Builds one worker's dataset (input_pipeline_id = worker index).
using DatasetFunction = std::function<Dataset(const InputContext&)>;

struct RemoteFunction {
  std::uint64_t registry = 0;  // which RemoteFunctions made it
  std::uint32_t index = 0;
  std::string name;
};

// The functions workers may run, in registration order. Every rank must
// register the same names in the same order before constructing the
// strategy.
class RemoteFunctions {
 public:
  RemoteFunctions();
  // Names must be unique and non-empty (InvalidArgumentError).
  RemoteFunction add(std::string name, WorkerFunction function);
  RemoteFunction add_dataset(std::string name, DatasetFunction function);

  std::uint64_t serial() const { return serial_; }
  std::size_t size() const { return names_.size(); }
  const std::string& name(std::uint32_t index) const { return names_.at(index); }
  bool is_dataset(std::uint32_t index) const { return datasets_.at(index) != nullptr; }
  const WorkerFunction& function(std::uint32_t index) const { return functions_.at(index); }
  const DatasetFunction& dataset_function(std::uint32_t index) const {
    return *datasets_.at(index);
  }

 private:
  RemoteFunction add_entry(std::string name, WorkerFunction function,
                           std::shared_ptr<DatasetFunction> dataset);
  std::uint64_t serial_;
  std::vector<std::string> names_;
  std::vector<WorkerFunction> functions_;
  std::vector<std::shared_ptr<DatasetFunction>> datasets_;
};

namespace detail {
struct RemoteValueState;
struct PsCluster;
}  // namespace detail

// The future result of a scheduled closure (tf's RemoteValue).
class RemoteValue {
 public:
  enum class Status { kPending, kReady, kFailed, kCancelled };
  Status status() const;
  // Blocks until the closure finished; its result, or its error
  // (InvalidArgumentError "closure 'f' #3 failed on worker 1: ...",
  // UnavailableError when a ps failed, "cancelled" when an earlier closure
  // failed first). Bounded by failure detection, not by a fixed time.
  Tensor fetch() const;

  explicit RemoteValue(std::shared_ptr<detail::RemoteValueState> state)
      : state_(std::move(state)) {}

 private:
  std::shared_ptr<detail::RemoteValueState> state_;
};

// A dataset per worker (tf's PerWorkerDataset).
class PerWorkerDataset {
 public:
  // A fresh iterator on every worker (tf's iter(per_worker_dataset)).
  PerWorkerIterator make_iterator();

  PerWorkerDataset(std::uint64_t coordinator_serial, std::uint32_t function, std::uint64_t id)
      : coordinator_serial_(coordinator_serial), function_(function), id_(id) {}

 private:
  std::uint64_t coordinator_serial_;
  std::uint32_t function_;
  std::uint64_t id_;
};

class ClusterCoordinator {
 public:
  // Only on the chief (InvalidArgumentError elsewhere, naming the task).
  explicit ClusterCoordinator(ParameterServerStrategy& strategy);
  ~ClusterCoordinator();
  ClusterCoordinator(const ClusterCoordinator&) = delete;
  ClusterCoordinator& operator=(const ClusterCoordinator&) = delete;

  // Queues fn(args) for some worker and returns at once. Raises
  // InvalidArgumentError naming the function when fn is not from the
  // strategy's registry or is a dataset function, or an argument is a
  // variable of another strategy; UnavailableError once a ps has failed.
  RemoteValue schedule(const RemoteFunction& fn, std::vector<ClosureArgument> args = {});
  // Waits until every scheduled closure finished. Raises the first closure
  // error since the last join (and clears it; queued closures were
  // cancelled), or UnavailableError when a ps or every worker failed.
  void join();
  // True when nothing is queued or running; raises as join() does.
  bool done();
  std::vector<Tensor> fetch(const std::vector<RemoteValue>& values);

  // dataset_fn (from RemoteFunctions::add_dataset) runs once on each worker,
  // lazily, with InputContext(num_workers, worker index).
  PerWorkerDataset create_per_worker_dataset(const RemoteFunction& dataset_fn);

  ParameterServerStrategy& strategy() { return strategy_; }

 private:
  ParameterServerStrategy& strategy_;
  std::shared_ptr<detail::PsCluster> cluster_;
};

}  // namespace collective::distribute
