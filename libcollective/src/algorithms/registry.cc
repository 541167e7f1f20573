#include "algorithms/registry.h"

#include <array>

#include "algorithms/hierarchical.h"
#include "algorithms/mpi_passthrough.h"
#include "algorithms/recursive_doubling.h"
#include "algorithms/ring.h"
#include "algorithms/shared_memory.h"

namespace collective::internal {

const char* CollectiveAlgorithm::name() const { return to_string(id()).data(); }

namespace {

// An explicit list, not static self-registration: a static link can drop
// objects that nothing references.
const RingAlgorithm kRing;
const RecursiveDoublingAlgorithm kRecursiveDoubling;
const MpiPassthroughAlgorithm kMpi;
const SharedMemoryAlgorithm kSharedMemory;
const HierarchicalAlgorithm kHierarchical;

// Order of preference: on equal cost estimates AUTO takes the earlier one.
const std::array<const CollectiveAlgorithm*, 5> kAlgorithms = {
    &kSharedMemory, &kHierarchical, &kRing, &kRecursiveDoubling, &kMpi};

}  // namespace

std::span<const CollectiveAlgorithm* const> all_algorithms() { return kAlgorithms; }

const CollectiveAlgorithm* find_algorithm(Algorithm id) {
  for (const CollectiveAlgorithm* algorithm : kAlgorithms) {
    if (algorithm->id() == id) return algorithm;
  }
  return nullptr;
}

}  // namespace collective::internal
