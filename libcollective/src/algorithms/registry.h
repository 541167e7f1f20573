// The one place that names every algorithm.
#pragma once

#include <span>

#include "algorithms/collective_algorithm.h"

namespace collective::internal {

// All algorithms built into this library, in order of preference.
std::span<const CollectiveAlgorithm* const> all_algorithms();

// The algorithm with this id, or nullptr when it is not built in (e.g. NCCL
// in a build without CUDA).
const CollectiveAlgorithm* find_algorithm(Algorithm id);

}  // namespace collective::internal
