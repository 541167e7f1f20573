#include "algorithms/registry.h"

#include <array>

#include "algorithms/hierarchical.h"
#include "algorithms/mpi_passthrough.h"
#include "algorithms/recursive_doubling.h"
#include "algorithms/ring.h"
#include "algorithms/shared_memory.h"
#ifdef COLLECTIVE_HAVE_NCCL
#include "algorithms/nccl/nccl.h"
#endif

namespace collective::internal {

const char* CollectiveAlgorithm::name() const { return to_string(id()).data(); }

namespace {

// An explicit list, not static self-registration: a static link can drop
// objects that nothing references.
const RecursiveDoublingAlgorithm kRecursiveDoubling;
const MpiPassthroughAlgorithm kMpi;
const SharedMemoryAlgorithm kSharedMemory;
const HierarchicalAlgorithm kHierarchical;
#ifdef COLLECTIVE_HAVE_NCCL
const NcclAlgorithm kNccl;  // last: AUTO reaches it for device buffers, which the others refuse
#endif

// Order of preference: on equal cost estimates AUTO takes the earlier one.
const auto kAlgorithms = std::to_array<const CollectiveAlgorithm*>({
    &kSharedMemory,
    &kHierarchical,
    &kRingAlgorithm,
    &kRecursiveDoubling,
    &kMpi,
#ifdef COLLECTIVE_HAVE_NCCL
    &kNccl,
#endif
});

}  // namespace

std::span<const CollectiveAlgorithm* const> all_algorithms() { return kAlgorithms; }

const CollectiveAlgorithm* find_algorithm(Algorithm id) {
  for (const CollectiveAlgorithm* algorithm : kAlgorithms) {
    if (algorithm->id() == id) return algorithm;
  }
  return nullptr;
}

}  // namespace collective::internal
