// Strategy's dataset entry points, on the strategy's implementation (which
// the distributed dataset and its iterators share): Strategy (strategy.cc)
// forwards experimental_distribute_dataset and
// distribute_datasets_from_function here.
#pragma once

#include <functional>
#include <memory>

#include "collective/distribute/dataset.h"
#include "collective/distribute/distributed_dataset.h"
#include "collective/distribute/input_context.h"

namespace collective::distribute::detail {

struct StrategyImpl;

DistributedDataset distribute_dataset(const std::shared_ptr<StrategyImpl>& impl,
                                      const Dataset& dataset, const InputOptions& options);

DistributedDataset distribute_datasets_from_function(
    const std::shared_ptr<StrategyImpl>& impl,
    const std::function<Dataset(const InputContext&)>& fn, const InputOptions& options);

}  // namespace collective::distribute::detail
