#include "collective/distribute/cluster_coordinator.h"

#include <atomic>

#include "ps/cluster_coordinator.h"
#include "ps/ps_cluster.h"
#include "ps/ps_variable.h"
#include "ps/ps_strategy_access.h"
#include "core/variable_state.h"

namespace collective::distribute {

namespace {
std::atomic<std::uint64_t> g_next_registry{1};
std::atomic<std::uint64_t> g_next_dataset{1};
std::atomic<std::uint64_t> g_next_iterator{1};

const char* kind_name(int kind) {
  switch (kind) {
    case 0: return "a tensor";
    case 1: return "a variable";
    default: return "a per-worker iterator";
  }
}
}  // namespace

// ---- ClosureArguments --------------------------------------------------

ClosureArguments::ClosureArguments(std::string function, int worker_index, int num_workers)
    : function_(std::move(function)), worker_index_(worker_index), num_workers_(num_workers) {}

Strategy& ClosureArguments::strategy() const {
  if (strategy_ == nullptr) {
    throw InvalidArgumentError(
        "closure '" + function_ + "'", -1,
        "these arguments belong to no worker's strategy (made outside a worker)");
  }
  return *strategy_;
}

void ClosureArguments::check(std::size_t index, Kind kind) const {
  if (index >= kinds_.size()) {
    throw InvalidArgumentError("closure '" + function_ + "'", -1,
                               "argument " + std::to_string(index) + " asked for, but " +
                                   std::to_string(kinds_.size()) + " were passed");
  }
  if (kinds_[index] != kind) {
    throw InvalidArgumentError("closure '" + function_ + "'", -1,
                               "argument " + std::to_string(index) + " is " +
                                   kind_name(static_cast<int>(kinds_[index])) + ", read as " +
                                   kind_name(static_cast<int>(kind)));
  }
}

const Tensor& ClosureArguments::tensor(std::size_t index) const {
  check(index, Kind::kTensor);
  return tensors_[slots_[index]];
}
Variable ClosureArguments::variable(std::size_t index) const {
  check(index, Kind::kVariable);
  return variables_[slots_[index]];
}
Dataset::Iterator& ClosureArguments::iterator(std::size_t index) const {
  check(index, Kind::kIterator);
  return *iterators_[slots_[index]];
}
void ClosureArguments::add_tensor(Tensor tensor) {
  kinds_.push_back(Kind::kTensor);
  slots_.push_back(tensors_.size());
  tensors_.push_back(std::move(tensor));
}
void ClosureArguments::add_variable(Variable variable) {
  kinds_.push_back(Kind::kVariable);
  slots_.push_back(variables_.size());
  variables_.push_back(std::move(variable));
}
void ClosureArguments::add_iterator(Dataset::Iterator* iterator) {
  kinds_.push_back(Kind::kIterator);
  slots_.push_back(iterators_.size());
  iterators_.push_back(iterator);
}

// ---- RemoteFunctions ---------------------------------------------------

RemoteFunctions::RemoteFunctions() : serial_(g_next_registry.fetch_add(1)) {}

RemoteFunction RemoteFunctions::add_entry(std::string name, WorkerFunction function,
                                          std::shared_ptr<DatasetFunction> dataset) {
  if (name.empty() || name.find_first_of(std::string("\x01\x02\0", 3)) != std::string::npos) {
    throw InvalidArgumentError("RemoteFunctions::add", -1,
                               "a function needs a non-empty name without control bytes 0-2");
  }
  for (const std::string& existing : names_) {
    if (existing == name) {
      throw InvalidArgumentError("RemoteFunctions::add", -1,
                                 "function '" + name + "' is registered twice");
    }
  }
  if (!function && !dataset) {
    throw InvalidArgumentError("RemoteFunctions::add", -1, "function '" + name + "' is empty");
  }
  names_.push_back(name);
  functions_.push_back(std::move(function));
  datasets_.push_back(std::move(dataset));
  return RemoteFunction{serial_, static_cast<std::uint32_t>(names_.size() - 1), std::move(name)};
}

RemoteFunction RemoteFunctions::add(std::string name, WorkerFunction function) {
  if (!function) {
    throw InvalidArgumentError("RemoteFunctions::add", -1, "function '" + name + "' is empty");
  }
  return add_entry(std::move(name), std::move(function), nullptr);
}

RemoteFunction RemoteFunctions::add_dataset(std::string name, DatasetFunction function) {
  if (!function) {
    throw InvalidArgumentError("RemoteFunctions::add_dataset", -1,
                               "function '" + name + "' is empty");
  }
  return add_entry(std::move(name), nullptr,
                   std::make_shared<DatasetFunction>(std::move(function)));
}

// ---- RemoteValue -------------------------------------------------------

namespace detail {

void RemoteValueState::finish(RemoteValue::Status new_status, Tensor result) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (status != RemoteValue::Status::kPending) return;
    status = new_status;
    value = std::move(result);
  }
  changed.notify_all();
}

void RemoteValueState::fail(RemoteValue::Status new_status, std::string operation, int rank,
                            std::string cause, bool is_unavailable) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (status != RemoteValue::Status::kPending) return;
    status = new_status;
    error_operation = std::move(operation);
    error_rank = rank;
    error_cause = std::move(cause);
    unavailable = is_unavailable;
  }
  changed.notify_all();
}

}  // namespace detail

RemoteValue::Status RemoteValue::status() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->status;
}

Tensor RemoteValue::fetch() const {
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->changed.wait(lock, [this] { return state_->status != Status::kPending; });
  if (state_->status == Status::kReady) return state_->value;
  if (state_->unavailable) {
    throw UnavailableError(state_->error_operation, state_->error_rank, state_->error_cause);
  }
  throw ClosureError(state_->error_operation, state_->error_rank, state_->error_cause);
}

PerWorkerIterator PerWorkerDataset::make_iterator() {
  return PerWorkerIterator{coordinator_serial_, function_, id_, g_next_iterator.fetch_add(1)};
}

// ---- ClusterCoordinator ------------------------------------------------

ClusterCoordinator::ClusterCoordinator(ParameterServerStrategy& strategy)
    : strategy_(strategy), cluster_(detail::cluster_of(strategy).shared_from_this()) {
  if (!detail::coordinates(strategy)) {
    throw InvalidArgumentError("ClusterCoordinator", cluster_->rank,
                               "constructed on " + cluster_->task_type + " " +
                                   std::to_string(cluster_->task_id) + " (rank " +
                                   std::to_string(cluster_->rank) +
                                   "); only the chief (rank 0) coordinates: on other ranks the "
                                   "strategy's constructor has already served and returned");
  }
  if (cluster_->shut_down) {
    throw InvalidArgumentError("ClusterCoordinator", 0, "the strategy's cluster was shut down");
  }
}

ClusterCoordinator::~ClusterCoordinator() = default;

RemoteValue ClusterCoordinator::schedule(const RemoteFunction& fn,
                                         std::vector<ClosureArgument> args) {
  const std::string operation = "ClusterCoordinator::schedule('" + fn.name + "')";
  const RemoteFunctions& functions = *cluster_->functions;
  if (fn.registry != functions.serial() || fn.index >= functions.size() ||
      functions.name(fn.index) != fn.name) {
    throw InvalidArgumentError(
        operation, 0,
        "function '" + fn.name +
            "' is not from the RemoteFunctions this "
            "strategy was constructed with; register it there (on every rank, "
            "in the same order) before constructing the strategy");
  }
  if (functions.is_dataset(fn.index)) {
    throw InvalidArgumentError(operation, 0,
                               "'" + fn.name +
                                   "' is a dataset function; pass it to "
                                   "create_per_worker_dataset, not to schedule");
  }
  detail::Writer writer;
  writer.u32(fn.index);
  writer.u32(static_cast<std::uint32_t>(args.size()));
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (const Tensor* tensor = std::get_if<Tensor>(&args[i])) {
      writer.u32(0);
      writer.tensor(*tensor);
    } else if (const Variable* variable = std::get_if<Variable>(&args[i])) {
      const detail::VariableState& state = variable->state();
      if (!state.remote || detail::ps_variable_of(state)->cluster != cluster_) {
        throw InvalidArgumentError(
            operation, 0,
            "argument " + std::to_string(i) + " is variable '" + state.name + "' of " +
                state.strategy_label +
                "; closures take variables created in this strategy's scope");
      }
      writer.u32(1);
      detail::write_variable(writer, state);
    } else {
      const PerWorkerIterator& iterator = std::get<PerWorkerIterator>(args[i]);
      if (iterator.coordinator_serial != functions.serial()) {
        throw InvalidArgumentError(
            operation, 0,
            "argument " + std::to_string(i) +
                " is a per-worker iterator of another strategy's coordinator");
      }
      writer.u32(2);
      writer.u32(iterator.dataset_function);
      writer.u64(iterator.dataset_id);
      writer.u64(iterator.iterator_id);
    }
  }
  return RemoteValue(cluster_->dispatcher->schedule(fn.index, writer.take()));
}

void ClusterCoordinator::join() { cluster_->dispatcher->join(); }

bool ClusterCoordinator::done() { return cluster_->dispatcher->done(); }

std::vector<Tensor> ClusterCoordinator::fetch(const std::vector<RemoteValue>& values) {
  std::vector<Tensor> results;
  results.reserve(values.size());
  for (const RemoteValue& value : values) results.push_back(value.fetch());
  return results;
}

PerWorkerDataset ClusterCoordinator::create_per_worker_dataset(const RemoteFunction& dataset_fn) {
  const RemoteFunctions& functions = *cluster_->functions;
  const std::string operation =
      "ClusterCoordinator::create_per_worker_dataset('" + dataset_fn.name + "')";
  if (dataset_fn.registry != functions.serial() || dataset_fn.index >= functions.size() ||
      functions.name(dataset_fn.index) != dataset_fn.name) {
    throw InvalidArgumentError(operation, 0,
                               "function '" + dataset_fn.name +
                                   "' is not from the RemoteFunctions "
                                   "this strategy was constructed with");
  }
  if (!functions.is_dataset(dataset_fn.index)) {
    throw InvalidArgumentError(operation, 0,
                               "'" + dataset_fn.name +
                                   "' is a worker function; register dataset "
                                   "functions with RemoteFunctions::add_dataset");
  }
  cluster_->dispatcher->check_available();
  return PerWorkerDataset(functions.serial(), dataset_fn.index, g_next_dataset.fetch_add(1));
}

}  // namespace collective::distribute
