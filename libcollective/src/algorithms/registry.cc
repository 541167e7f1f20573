#include "algorithms/registry.h"

#include <algorithm>
#include <array>

#include "collective/errors.h"

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

bool CollectiveAlgorithm::serves(CollectiveKind kind) const {
  return std::ranges::find(serves(), kind) != serves().end();
}

Support CollectiveAlgorithm::supports(const Request& request,
                                      const CommunicatorState& state) const {
  if (serves(request.kind)) return supports_served(request, state);
  std::string served;
  for (const CollectiveKind kind : serves()) {
    served += (served.empty() ? "" : ", ") + std::string(to_string(kind));
  }
  return Support::no(std::string(name()) + " does not implement " +
                     std::string(to_string(request.kind)) + " (it serves " + served + ")");
}

void CollectiveAlgorithm::refuse_unserved(const Request& request,
                                          const CommunicatorState& state) const {
  throw UnsupportedError(request.label(), state.rank, supports(request, state).reason);
}

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
