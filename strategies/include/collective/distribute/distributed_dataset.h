// A dataset distributed over a strategy's replicas
// (tf.distribute.DistributedDataset). Each step yields a PerReplica<Element>:
// one batch per local replica.
//
// experimental_distribute_dataset(dataset.batch(B)) (transformations after
// the batch are kept; a pipeline without batch is refused with an error
// that says to add one):
//   - Global replica g (= worker * local_replicas + local) gets rows
//     [g*B/N, (g+1)*B/N) of each global batch, rounded so that sizes differ
//     by at most one and the first replicas get the extra rows (N =
//     num_replicas_in_sync). A short last batch is split the same way, so a
//     replica may get zero rows.
//   - Across workers, as InputOptions::auto_shard_policy says (kAuto by
//     default): by file (kFile, or kAuto when the dataset reads at least as
//     many files as there are workers), worker w reads files w, w+W, ... and
//     batches B/W elements (the first B%W workers one more) per step. By
//     element (kData, or kAuto otherwise, then with a warning in the log, as
//     tf.distribute does), every worker runs the whole pipeline and keeps
//     its replicas' rows of each global batch. kOff: every worker runs the
//     whole pipeline, each global batch is cut into N parts as above and the
//     worker's replicas take the next local_replicas parts each step, so
//     every worker sees every element.
//   - When sharding by file, workers may run out at different steps; every
//     step the workers agree (one small all-reduce) whether anyone still has
//     data, and a worker without data gives its replicas empty batches.
//
// distribute_datasets_from_function(fn): fn(InputContext) builds this
// worker's dataset, batched per replica; each step local replica r gets the
// r-th of the next num_local_replicas batches. With
// InputReplicationMode::kPerReplica fn builds one dataset per replica and
// each step every replica gets the next batch of its own. Workers agree on
// the end as above; replicas without a batch get an empty one.
//
// Every element of an epoch reaches exactly one replica. Iterate in the
// cross-replica context, on all workers in step.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "collective/distribute/dataset.h"
#include "collective/distribute/values.h"

namespace collective::distribute {

class StrategyExtended;

// How a distributed dataset shards its input across workers.
enum class InputSharding : int {
  kSingleWorker = 0,  // one worker: no sharding across workers
  kByFile,            // each worker reads its share of the files
  kByElement,         // each worker keeps its share of each global batch
  kFromFunction,      // the input function shards (no automatic sharding)
  kOff,               // AutoShardPolicy::kOff: every worker reads everything
};
std::string_view to_string(InputSharding sharding);

namespace detail {
struct DistributedDatasetState;
class DistributedIteratorState;
}  // namespace detail

class DistributedIterator {
 public:
  ~DistributedIterator();
  DistributedIterator(DistributedIterator&&) noexcept;
  DistributedIterator& operator=(DistributedIterator&&) noexcept;

  // The next step's per-replica batches; std::nullopt once every worker is
  // out of data.
  std::optional<PerReplica<Element>> get_next_as_optional();
  // As above; raises collective::Error ("end of sequence") at the end.
  PerReplica<Element> get_next();

 private:
  friend class DistributedDataset;
  explicit DistributedIterator(std::unique_ptr<detail::DistributedIteratorState> state);
  std::unique_ptr<detail::DistributedIteratorState> state_;
};

class DistributedDataset {
 public:
  ~DistributedDataset();
  DistributedDataset(const DistributedDataset&);
  DistributedDataset& operator=(const DistributedDataset&);

  // A fresh pass (epoch).
  DistributedIterator make_iterator() const;

  InputSharding sharding() const;
  // Global batch size (experimental_distribute_dataset), or std::nullopt.
  std::optional<std::int64_t> global_batch_size() const;

  // The spec of one replica's element (tf.distribute's element_spec): each
  // component's dtype and shape, the leading (batch) dimension -1 because
  // replicas' batches may differ in size (TF's None). Peeks at the first
  // element of a fresh pass of the input (std::nullopt when it is empty);
  // a shuffle's passes are not advanced by the peek.
  std::optional<ElementSpec> element_spec() const;

  // Range-for support: for (const PerReplica<Element>& step : dataset) ...
  class RangeIterator {
   public:
    const PerReplica<Element>& operator*() const { return *current_; }
    RangeIterator& operator++();
    bool operator!=(std::nullptr_t) const { return current_.has_value(); }

   private:
    friend class DistributedDataset;
    explicit RangeIterator(DistributedIterator iterator);
    DistributedIterator iterator_;
    std::optional<PerReplica<Element>> current_;
  };
  RangeIterator begin() const;
  std::nullptr_t end() const { return nullptr; }

  // Internal: made by Strategy.
  explicit DistributedDataset(std::shared_ptr<const detail::DistributedDatasetState> state);

 private:
  std::shared_ptr<const detail::DistributedDatasetState> state_;
};

}  // namespace collective::distribute
