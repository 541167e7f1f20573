#include "collective/distribute/distributed_dataset.h"

#include <deque>

#include "collective/errors.h"
#include "core/context_stack.h"
#include "base/log.h"
#include "core/distributed_dataset.h"
#include "core/strategy_impl.h"

namespace collective::distribute {

std::string_view to_string(InputSharding sharding) {
  switch (sharding) {
    case InputSharding::kSingleWorker: return "single_worker";
    case InputSharding::kByFile: return "by_file";
    case InputSharding::kByElement: return "by_element";
    case InputSharding::kFromFunction: return "from_function";
    case InputSharding::kOff: return "off";
  }
  return "unknown";
}

namespace detail {

struct DistributedDatasetState {
  // Shared with the strategy: an iterator may outlive both the strategy and
  // the DistributedDataset it came from (it keeps the communicator that
  // agrees on the end of the input, and the configuration).
  std::shared_ptr<StrategyImpl> impl;
  InputSharding sharding = InputSharding::kSingleWorker;
  std::optional<std::int64_t> global_batch_size;
  // What this worker iterates: the global batches (single worker, by
  // element), its files batched per worker (by file), or the function's
  // dataset.
  Dataset dataset;
  // Where the spec of an empty batch comes from when this worker has seen no
  // element yet.
  Dataset spec_source;
  // distribute_datasets_from_function with InputReplicationMode::kPerReplica:
  // one dataset per local replica (dataset is the first).
  std::vector<Dataset> replica_datasets;
};

namespace {

// Rows of `rows` for part `part` of `parts`: sizes differ by at most one,
// the first parts get the extra rows.
std::pair<std::int64_t, std::int64_t> split_range(std::int64_t rows, std::int64_t part,
                                                  std::int64_t parts) {
  const std::int64_t base = rows / parts;
  const std::int64_t extra = rows % parts;
  const std::int64_t begin = part * base + std::min(part, extra);
  return {begin, begin + base + (part < extra ? 1 : 0)};
}

ElementSpec spec_of(const Element& batch) {
  ElementSpec spec;
  for (const Tensor& component : batch)
    spec.push_back(ComponentSpec{component.dtype(), component.shape()});
  return spec;
}

}  // namespace

std::vector<Element> this_workers_parts(const StrategyImpl& impl, const Element& global_batch) {
  const std::int64_t rows = batch_rows(global_batch);
  const std::int64_t local = impl.num_local_replicas;
  std::vector<Element> parts;
  for (std::int64_t r = 0; r < local; ++r) {
    const auto [begin, end] =
        split_range(rows, impl.worker_index * local + r, impl.num_replicas_in_sync());
    parts.push_back(slice_batch(global_batch, begin, end));
  }
  return parts;
}

class DistributedIteratorState {
 public:
  explicit DistributedIteratorState(std::shared_ptr<const DistributedDatasetState> state)
      : state_(std::move(state)), iterator_(state_->dataset.make_iterator()) {
    // Replica 0's iterator is iterator_; the others get their own.
    for (std::size_t r = 1; r < state_->replica_datasets.size(); ++r) {
      replica_iterators_.push_back(state_->replica_datasets[r].make_iterator());
    }
  }

  std::optional<PerReplica<Element>> next() {
    StrategyImpl& impl = *state_->impl;
    const std::string operation = impl.label() + " DistributedIterator.get_next";
    if (inside_run_on_this_thread()) {
      throw InvalidArgumentError(operation, impl.error_rank(),
                                 "distributed input is iterated in the cross-replica context, "
                                 "not inside run()");
    }
    if (finished_) return std::nullopt;
    const std::int64_t local = impl.num_local_replicas;
    switch (state_->sharding) {
      case InputSharding::kSingleWorker:
      case InputSharding::kByElement: {
        // Every worker sees every global batch, so they run out together.
        std::optional<Element> batch = iterator_.get_next();
        if (!batch) return finish();
        std::vector<Element> replicas = this_workers_parts(impl, *batch);
        if (impl.elastic_state) remember_for_recut(impl, std::move(*batch), replicas);
        return PerReplica<Element>(std::move(replicas));
      }
      case InputSharding::kByFile: {
        refuse_when_elastic(impl, operation);
        std::optional<Element> batch = iterator_.get_next();
        if (!impl.any_worker(batch.has_value(), operation)) return finish();
        std::vector<Element> replicas;
        if (batch) {
          remember(*batch);
          const std::int64_t rows = batch_rows(*batch);
          for (std::int64_t r = 0; r < local; ++r) {
            const auto [begin, end] = split_range(rows, r, local);
            replicas.push_back(slice_batch(*batch, begin, end));
          }
        } else {
          for (std::int64_t r = 0; r < local; ++r) replicas.push_back(empty(operation));
        }
        return PerReplica<Element>(std::move(replicas));
      }
      case InputSharding::kOff: {
        refuse_when_elastic(impl, operation);
        // Every worker runs the whole pipeline; each global batch is cut
        // into num_replicas_in_sync parts and this worker's replicas take
        // the next num_local_replicas parts per step (tf.distribute's
        // rebatch without sharding). All workers take the same steps.
        if (pending_.empty()) {
          std::optional<Element> batch = iterator_.get_next();
          if (!batch) return finish();
          const std::int64_t rows = batch_rows(*batch);
          const std::int64_t parts = impl.num_replicas_in_sync();
          for (std::int64_t p = 0; p < parts; ++p) {
            const auto [begin, end] = split_range(rows, p, parts);
            pending_.push_back(slice_batch(*batch, begin, end));
          }
        }
        std::vector<Element> replicas;
        for (std::int64_t r = 0; r < local; ++r) {
          replicas.push_back(std::move(pending_.front()));
          pending_.pop_front();
        }
        return PerReplica<Element>(std::move(replicas));
      }
      case InputSharding::kFromFunction: {
        refuse_when_elastic(impl, operation);
        if (!replica_iterators_.empty() || state_->replica_datasets.size() == 1) {
          // One dataset per replica: each replica its own next batch.
          std::vector<std::optional<Element>> batches;
          bool any = false;
          for (std::int64_t r = 0; r < local; ++r) {
            Dataset::Iterator& source =
                r == 0 ? iterator_ : replica_iterators_[static_cast<std::size_t>(r - 1)];
            batches.push_back(source.get_next());
            if (batches.back()) {
              any = true;
              remember(*batches.back());
            }
          }
          if (!impl.any_worker(any, operation)) return finish();
          std::vector<Element> replicas;
          for (std::optional<Element>& batch : batches) {
            replicas.push_back(batch ? std::move(*batch) : empty(operation));
          }
          return PerReplica<Element>(std::move(replicas));
        }
        std::vector<Element> replicas;
        for (std::int64_t r = 0; r < local; ++r) {
          std::optional<Element> batch = iterator_.get_next();
          if (!batch) break;
          remember(*batch);
          replicas.push_back(std::move(*batch));
        }
        if (!impl.any_worker(!replicas.empty(), operation)) return finish();
        while (static_cast<std::int64_t>(replicas.size()) < local)
          replicas.push_back(empty(operation));
        return PerReplica<Element>(std::move(replicas));
      }
    }
    return std::nullopt;
  }

 private:
  // Elastic training: a step that lost a worker is redone on its global
  // batch cut anew over the survivors (recut_batch), so the batch is kept
  // with the first bytes of each part as handed out, which is how run()
  // knows its argument (Strategy::run, detail::elastic_part).
  static void remember_for_recut(StrategyImpl& impl, Element global,
                                 const std::vector<Element>& parts) {
    StrategyImpl::ElasticState& elastic = *impl.elastic_state;
    elastic.global_batch = std::move(global);
    elastic.batch_membership = elastic.membership;
    elastic.part_keys.clear();
    for (const Element& part : parts) {
      elastic.part_keys.push_back(part.empty() ? nullptr : part.front().raw_data());
    }
  }

  // Other shardings cannot be cut anew over fewer workers.
  void refuse_when_elastic(const StrategyImpl& impl, const std::string& operation) const {
    if (!impl.elastic_state) return;
    throw UnsupportedError(operation, impl.error_rank(),
                           "elastic training redoes a step on its global batch cut over the "
                           "surviving workers, which needs the input distributed by element "
                           "(experimental_distribute_dataset with a batched dataset, auto or "
                           "data sharding); this dataset is distributed " +
                               std::string(to_string(state_->sharding)));
  }

  std::optional<PerReplica<Element>> finish() {
    finished_ = true;
    return std::nullopt;
  }

  void remember(const Element& batch) {
    if (!spec_) spec_ = spec_of(batch);
  }

  Element empty(const std::string& operation) {
    if (!spec_) {
      std::optional<ElementSpec> peeked = state_->spec_source.element_spec();
      if (!peeked) {
        throw InvalidArgumentError(operation, state_->impl->error_rank(),
                                   "this worker's input produced no element while other workers "
                                   "still have data, so the shape of its replicas' empty batches "
                                   "is unknown; give every worker at least one batch");
      }
      spec_ = *peeked;
    }
    return empty_batch(*spec_);
  }

  std::shared_ptr<const DistributedDatasetState> state_;
  Dataset::Iterator iterator_;
  std::vector<Dataset::Iterator> replica_iterators_;
  std::deque<Element> pending_;  // kOff: this global batch's parts not yet given
  std::optional<ElementSpec> spec_;
  bool finished_ = false;
};

}  // namespace detail

DistributedIterator::DistributedIterator(std::unique_ptr<detail::DistributedIteratorState> state)
    : state_(std::move(state)) {}
DistributedIterator::~DistributedIterator() = default;
DistributedIterator::DistributedIterator(DistributedIterator&&) noexcept = default;
DistributedIterator& DistributedIterator::operator=(DistributedIterator&&) noexcept = default;

std::optional<PerReplica<Element>> DistributedIterator::get_next_as_optional() {
  return state_->next();
}

PerReplica<Element> DistributedIterator::get_next() {
  std::optional<PerReplica<Element>> next = state_->next();
  if (!next) throw Error("DistributedIterator.get_next", -1, "end of sequence");
  return std::move(*next);
}

DistributedDataset::DistributedDataset(std::shared_ptr<const detail::DistributedDatasetState> state)
    : state_(std::move(state)) {}
DistributedDataset::~DistributedDataset() = default;
DistributedDataset::DistributedDataset(const DistributedDataset&) = default;
DistributedDataset& DistributedDataset::operator=(const DistributedDataset&) = default;

DistributedIterator DistributedDataset::make_iterator() const {
  return DistributedIterator(std::make_unique<detail::DistributedIteratorState>(state_));
}

InputSharding DistributedDataset::sharding() const { return state_->sharding; }

std::optional<std::int64_t> DistributedDataset::global_batch_size() const {
  return state_->global_batch_size;
}

std::optional<ElementSpec> DistributedDataset::element_spec() const {
  std::optional<ElementSpec> spec = state_->spec_source.element_spec();
  if (!spec) return std::nullopt;
  for (ComponentSpec& component : *spec) {
    if (component.shape.empty()) {
      throw InvalidArgumentError(
          state_->impl->label() + " DistributedDataset.element_spec", state_->impl->error_rank(),
          "the input yields unbatched elements; a replica's element is a batch");
    }
    component.shape.front() = -1;
  }
  return spec;
}

DistributedDataset::RangeIterator::RangeIterator(DistributedIterator iterator)
    : iterator_(std::move(iterator)), current_(iterator_.get_next_as_optional()) {}

DistributedDataset::RangeIterator& DistributedDataset::RangeIterator::operator++() {
  current_ = iterator_.get_next_as_optional();
  return *this;
}

DistributedDataset::RangeIterator DistributedDataset::begin() const {
  return RangeIterator(make_iterator());
}

// ---- Strategy's entry points ------------------------------------------------

namespace detail {

DistributedDataset distribute_dataset(const std::shared_ptr<StrategyImpl>& shared_impl,
                                      const Dataset& dataset, const InputOptions& options) {
  detail::StrategyImpl& impl = *shared_impl;
  const std::string operation = impl.label() + " experimental_distribute_dataset";
  if (options.experimental_replication_mode != InputReplicationMode::kPerWorker) {
    throw InvalidArgumentError(operation, impl.error_rank(),
                               "InputReplicationMode::kPerReplica is only supported by "
                               "distribute_datasets_from_function (as in tf.distribute)");
  }
  const AutoShardPolicy policy = options.auto_shard_policy;
  if (static_cast<int>(policy) < 0 ||
      static_cast<int>(policy) > static_cast<int>(AutoShardPolicy::kOff)) {
    throw InvalidArgumentError(
        operation, impl.error_rank(),
        "unknown AutoShardPolicy " + std::to_string(static_cast<int>(policy)));
  }
  const std::optional<std::pair<std::int64_t, bool>> last_batch = dataset.last_batch();
  if (!last_batch) {
    throw InvalidArgumentError(operation, impl.error_rank(),
                               "the dataset yields unbatched elements (its pipeline is " +
                                   dataset.describe() +
                                   "): add batch(global_batch_size), whose "
                                   "batches are split across the replicas; transformations after "
                                   "batch (prefetch, repeat, take, filter, ...) are kept");
  }
  const std::int64_t global_batch = last_batch->first;
  auto state = std::make_shared<detail::DistributedDatasetState>(detail::DistributedDatasetState{
      shared_impl, InputSharding::kSingleWorker, global_batch, dataset, dataset, {}});
  const std::int64_t workers = impl.num_workers;
  if (workers == 1) return DistributedDataset(state);
  const std::vector<std::string>& files = dataset.files();
  const bool enough_files = static_cast<std::int64_t>(files.size()) >= workers;
  if (policy == AutoShardPolicy::kFile && !enough_files) {
    throw InvalidArgumentError(
        operation, impl.error_rank(),
        "AutoShardPolicy::kFile needs a pipeline that reads at least one file "
        "per worker; " +
            dataset.describe() + " reads " + std::to_string(files.size()) + " files for " +
            std::to_string(workers) +
            " workers (use kData or kAuto to shard "
            "by element)");
  }
  if (policy == AutoShardPolicy::kOff) {
    state->sharding = InputSharding::kOff;
  } else if (policy == AutoShardPolicy::kFile ||
             (policy == AutoShardPolicy::kAuto && enough_files)) {
    if (global_batch < workers) {
      throw InvalidArgumentError(operation, impl.error_rank(),
                                 "the global batch size " + std::to_string(global_batch) +
                                     " is smaller than the number of workers " +
                                     std::to_string(workers));
    }
    std::vector<std::string> mine;
    for (std::size_t f = static_cast<std::size_t>(impl.worker_index); f < files.size();
         f += static_cast<std::size_t>(workers)) {
      mine.push_back(files[f]);
    }
    const std::int64_t per_worker =
        global_batch / workers + (impl.worker_index < global_batch % workers ? 1 : 0);
    state->sharding = InputSharding::kByFile;
    state->dataset = dataset.with_files(std::move(mine)).with_batch_size(per_worker);
  } else {
    state->sharding = InputSharding::kByElement;
    if (policy == AutoShardPolicy::kAuto) {
      DISTRIBUTE_LOG(kWarn, operation << ": the dataset reads " << files.size() << " files for "
                                      << workers
                                      << " workers, so it is sharded by element: every "
                                         "worker runs the whole input pipeline ("
                                      << dataset.describe()
                                      << ") and keeps its replicas' rows of each global batch. "
                                         "Give it at least one file per worker to shard by file.");
    }
  }
  return DistributedDataset(state);
}

DistributedDataset distribute_datasets_from_function(
    const std::shared_ptr<StrategyImpl>& shared_impl,
    const std::function<Dataset(const InputContext&)>& fn, const InputOptions& options) {
  detail::StrategyImpl& impl = *shared_impl;
  if (options.experimental_replication_mode == InputReplicationMode::kPerReplica) {
    // One pipeline per replica of the sync group.
    std::vector<Dataset> datasets;
    for (int r = 0; r < impl.num_local_replicas; ++r) {
      const int id = impl.worker_index * impl.num_local_replicas + r;
      datasets.push_back(
          fn(InputContext(impl.num_replicas_in_sync(), id, impl.num_replicas_in_sync())));
    }
    auto state = std::make_shared<detail::DistributedDatasetState>(
        detail::DistributedDatasetState{shared_impl, InputSharding::kFromFunction, std::nullopt,
                                        datasets.front(), datasets.front(), datasets});
    return DistributedDataset(state);
  }
  if (options.experimental_replication_mode != InputReplicationMode::kPerWorker) {
    throw InvalidArgumentError(
        impl.label() + " distribute_datasets_from_function", impl.error_rank(),
        "unknown InputReplicationMode " +
            std::to_string(static_cast<int>(options.experimental_replication_mode)));
  }
  const InputContext context(impl.num_workers, impl.worker_index, impl.num_replicas_in_sync());
  Dataset dataset = fn(context);
  auto state = std::make_shared<detail::DistributedDatasetState>(detail::DistributedDatasetState{
      shared_impl, InputSharding::kFromFunction, std::nullopt, dataset, dataset, {}});
  return DistributedDataset(state);
}

}  // namespace detail

}  // namespace collective::distribute
