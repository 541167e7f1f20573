#include "selection/selector.h"

#include "algorithms/registry.h"
#include "collective/errors.h"
#include "core/env_params.h"

namespace collective::internal {
namespace {

// AUTO's preference before a cost model is consulted: recursive doubling
// for small all_reduce (log2 p latency terms), the ring for everything
// large (2(p-1)/p bandwidth term), then whatever else supports the call.
Algorithm preferred(const Request& request) {
  switch (request.kind) {
    case CollectiveKind::kAllReduce:
      return request.bytes() <= env_params().small_message_bytes ? Algorithm::kRecursiveDoubling
                                                                 : Algorithm::kRing;
    case CollectiveKind::kBarrier:
      return Algorithm::kRecursiveDoubling;
    default:
      return Algorithm::kRing;
  }
}

}  // namespace

Selection select_algorithm(const Request& request, const CommunicatorState& state) {
  if (request.forced) {
    const CollectiveAlgorithm* algorithm = find_algorithm(request.requested);
    if (algorithm == nullptr) {
      throw UnsupportedError(request.label(), state.rank,
                             "algorithm " + std::string(to_string(request.requested)) +
                                 " is not built into this library");
    }
    const Support support = algorithm->supports(request, state);
    if (!support.ok) {
      throw UnsupportedError(request.label(), state.rank,
                             "forced algorithm " + std::string(algorithm->name()) +
                                 " cannot serve this call: " + support.reason);
    }
    return Selection{algorithm, "forced"};
  }
  const Algorithm first_choice = preferred(request);
  if (const CollectiveAlgorithm* algorithm = find_algorithm(first_choice)) {
    if (algorithm->supports(request, state).ok) {
      return Selection{algorithm, "size rule (COLLECTIVE_SMALL_MESSAGE_BYTES)"};
    }
  }
  std::string refusals;
  for (const CollectiveAlgorithm* algorithm : all_algorithms()) {
    const Support support = algorithm->supports(request, state);
    if (support.ok) return Selection{algorithm, "first algorithm that supports the call"};
    refusals += "; " + support.reason;
  }
  throw UnsupportedError(request.label(), state.rank, "no algorithm can serve this call" + refusals);
}

}  // namespace collective::internal
