#include "collective/distribute/distributed_dataset.h"

#include "collective/distribute/strategy.h"
#include "collective/errors.h"
#include "context_stack.h"
#include "log.h"
#include "strategy_impl.h"

namespace collective::distribute {

std::string_view to_string(InputSharding sharding) {
  switch (sharding) {
    case InputSharding::kSingleWorker: return "single_worker";
    case InputSharding::kByFile: return "by_file";
    case InputSharding::kByElement: return "by_element";
    case InputSharding::kFromFunction: return "from_function";
  }
  return "unknown";
}

namespace detail {

struct DistributedDatasetState {
  StrategyImpl* impl = nullptr;
  InputSharding sharding = InputSharding::kSingleWorker;
  std::optional<std::int64_t> global_batch_size;
  // What this worker iterates: the global batches (single worker, by
  // element), its files batched per worker (by file), or the function's
  // dataset.
  Dataset dataset;
  // Where the spec of an empty batch comes from when this worker has seen no
  // element yet.
  Dataset spec_source;
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
  for (const Tensor& component : batch) spec.push_back(ComponentSpec{component.dtype(), component.shape()});
  return spec;
}

}  // namespace

class DistributedIteratorState {
 public:
  explicit DistributedIteratorState(std::shared_ptr<const DistributedDatasetState> state)
      : state_(std::move(state)), iterator_(state_->dataset.make_iterator()) {}

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
        const std::int64_t rows = batch_rows(*batch);
        std::vector<Element> replicas;
        for (std::int64_t r = 0; r < local; ++r) {
          const auto [begin, end] =
              split_range(rows, impl.worker_index * local + r, impl.num_replicas_in_sync());
          replicas.push_back(slice_batch(*batch, begin, end));
        }
        return PerReplica<Element>(std::move(replicas));
      }
      case InputSharding::kByFile: {
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
      case InputSharding::kFromFunction: {
        std::vector<Element> replicas;
        for (std::int64_t r = 0; r < local; ++r) {
          std::optional<Element> batch = iterator_.get_next();
          if (!batch) break;
          remember(*batch);
          replicas.push_back(std::move(*batch));
        }
        if (!impl.any_worker(!replicas.empty(), operation)) return finish();
        while (static_cast<std::int64_t>(replicas.size()) < local) replicas.push_back(empty(operation));
        return PerReplica<Element>(std::move(replicas));
      }
    }
    return std::nullopt;
  }

 private:
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

DistributedDataset Strategy::experimental_distribute_dataset(const Dataset& dataset,
                                                             const InputOptions& options) {
  (void)options;  // kPerWorker is the only replication mode
  detail::StrategyImpl& impl = extended_->impl();
  const std::string operation = impl.label() + " experimental_distribute_dataset";
  const std::optional<std::int64_t> global_batch = dataset.batch_size();
  if (!global_batch) {
    throw InvalidArgumentError(operation, impl.error_rank(),
                               "the dataset must end with batch(global_batch_size) so it can be "
                               "split across replicas; its pipeline is " + dataset.describe());
  }
  auto state = std::make_shared<detail::DistributedDatasetState>(detail::DistributedDatasetState{
      &impl, InputSharding::kSingleWorker, global_batch, dataset, dataset});
  const std::int64_t workers = impl.num_workers;
  if (workers > 1) {
    const std::vector<std::string>& files = dataset.files();
    if (static_cast<std::int64_t>(files.size()) >= workers) {
      if (*global_batch < workers) {
        throw InvalidArgumentError(operation, impl.error_rank(),
                                   "the global batch size " + std::to_string(*global_batch) +
                                       " is smaller than the number of workers " +
                                       std::to_string(workers));
      }
      std::vector<std::string> mine;
      for (std::size_t f = static_cast<std::size_t>(impl.worker_index); f < files.size();
           f += static_cast<std::size_t>(workers)) {
        mine.push_back(files[f]);
      }
      const std::int64_t per_worker =
          *global_batch / workers + (impl.worker_index < *global_batch % workers ? 1 : 0);
      state->sharding = InputSharding::kByFile;
      state->dataset =
          dataset.unbatched().with_files(std::move(mine)).batch(per_worker, dataset.drop_remainder());
    } else {
      state->sharding = InputSharding::kByElement;
      DISTRIBUTE_LOG(kWarn, operation << ": the dataset reads " << files.size() << " files for "
                                      << workers << " workers, so it is sharded by element: every "
                                      "worker runs the whole input pipeline (" << dataset.describe()
                                      << ") and keeps its replicas' rows of each global batch. "
                                      "Give it at least one file per worker to shard by file.");
    }
  }
  return DistributedDataset(state);
}

DistributedDataset Strategy::distribute_datasets_from_function(
    const std::function<Dataset(const InputContext&)>& fn, const InputOptions& options) {
  (void)options;  // kPerWorker is the only replication mode
  detail::StrategyImpl& impl = extended_->impl();
  const InputContext context(impl.num_workers, impl.worker_index, impl.num_replicas_in_sync());
  Dataset dataset = fn(context);
  auto state = std::make_shared<detail::DistributedDatasetState>(detail::DistributedDatasetState{
      &impl, InputSharding::kFromFunction, std::nullopt, dataset, dataset});
  return DistributedDataset(state);
}

}  // namespace collective::distribute
