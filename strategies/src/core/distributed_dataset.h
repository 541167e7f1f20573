// Strategy's dataset entry points, on the strategy's implementation (which
// the distributed dataset and its iterators share): Strategy (strategy.cc)
// forwards experimental_distribute_dataset and
// distribute_datasets_from_function here.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "collective/distribute/dataset.h"
#include "collective/distribute/distributed_dataset.h"
#include "collective/distribute/input_context.h"

namespace collective::distribute::detail {

struct StrategyImpl;

DistributedDataset distribute_dataset(const std::shared_ptr<StrategyImpl>& impl,
                                      const Dataset& dataset, const InputOptions& options);

// This worker's local replicas' parts of a global batch: the batch cut
// into num_replicas_in_sync parts whose sizes differ by at most one row.
std::vector<Element> this_workers_parts(const StrategyImpl& impl, const Element& global_batch);

DistributedDataset distribute_datasets_from_function(
    const std::shared_ptr<StrategyImpl>& impl,
    const std::function<Dataset(const InputContext&)>& fn, const InputOptions& options);

}  // namespace collective::distribute::detail
