// Which algorithm serves a call: the forced one (option or
// COLLECTIVE_ALGORITHM), else AUTO's choice. Every rank must reach the same
// decision, so the choice depends only on arguments all ranks share.
#pragma once

#include <optional>
#include <string>

#include "algorithms/collective_algorithm.h"

namespace collective::internal {

struct Selection {
  const CollectiveAlgorithm* algorithm = nullptr;
  // Why, for COLLECTIVE_DEBUG and collective_info. Filled in only when
  // asked to explain: empty (no allocation) on the hot path.
  std::string reason;
};

// Raises UnsupportedError when a forced algorithm cannot serve the request
// (or is not built in), naming the algorithm and the reason.
//
// AUTO, in order: the first rule of COLLECTIVE_RULES_FILE that matches and
// names an algorithm able to serve the call (rules_file.h); else the
// cheapest supporting algorithm by the cost model (cost_model.h); else, for
// calls the model has no formula for, the size rule (recursive doubling
// for small all_reduce and barrier, the ring otherwise); else the first
// algorithm in the registry that supports the call.
//
// The reason is filled in when `explain` is set (collective_info); the
// two-argument form explains only when COLLECTIVE_DEBUG is DEBUG or more,
// so that the hot path builds no strings.
Selection select_algorithm(const Request& request, const CommunicatorState& state, bool explain);
Selection select_algorithm(const Request& request, const CommunicatorState& state);

struct RuleSet;
// The same with a given rule set (nullptr: none) instead of the process's.
Selection select_algorithm_with_rules(const Request& request, const CommunicatorState& state,
                                      const RuleSet* rules, bool explain);

// The cost model's seconds for `algorithm` serving `request` on
// `topology`, asked of the registry (CollectiveAlgorithm::estimate_seconds);
// nullopt when the algorithm is not built in or offers no estimate.
std::optional<double> model_seconds(Algorithm algorithm, const Request& request,
                                    const Topology& topology);

}  // namespace collective::internal
