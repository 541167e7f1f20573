#include "selection/selector.h"

#include <cstdio>
#include <mutex>
#include <set>
#include <sstream>

#include "algorithms/registry.h"
#include "collective/errors.h"
#include "collective/in_tree/collectives.h"
#include "core/env_params.h"
#include "core/log.h"
#include "cost/cost_model.h"
#include "selection/rules_file.h"

namespace collective::internal {
namespace {

// For collectives the cost model has no formulas for: recursive doubling for
// barrier, the ring for everything else; without a topology, the size rule
// for all_reduce.
Algorithm preferred(const Request& request) {
  switch (request.kind) {
    case CollectiveKind::kAllReduce:
      return request.bytes() <= env_params().small_message_bytes ? Algorithm::kRecursiveDoubling
                                                                 : Algorithm::kRing;
    case CollectiveKind::kBarrier: return Algorithm::kRecursiveDoubling;
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce: return Algorithm::kRing;
    // Served by MPI alone until an algorithm of the library opts in.
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kAllGatherV:
    case CollectiveKind::kReduceScatterV:
    case CollectiveKind::kGather:
    case CollectiveKind::kGatherV:
    case CollectiveKind::kScatter:
    case CollectiveKind::kScatterV: return Algorithm::kMpi;
  }
  return Algorithm::kRing;
}

std::string shape_text(const Topology& topology) {
  std::ostringstream out;
  out << topology.node_count() << (topology.node_count() == 1 ? " node x " : " nodes x ");
  if (topology.min_ranks_per_node() == topology.max_ranks_per_node()) {
    out << topology.max_ranks_per_node();
  } else {
    out << topology.min_ranks_per_node() << "-" << topology.max_ranks_per_node();
  }
  out << " ranks";
  return out.str();
}

std::string microseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g us", seconds * 1e6);
  return text;
}

// A rule that names an algorithm which cannot serve the call is skipped,
// with a warning the first time for each rule.
void warn_skipped_rule(const RuleSet& rules, std::size_t index, const Rule& rule,
                       const std::string& why) {
  static std::mutex mutex;
  static std::set<std::pair<std::string, std::size_t>> warned;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!warned.emplace(rules.origin, index).second) return;
  }
  COLLECTIVE_LOG(kWarn, rules.origin << " rule " << index << " (" << describe_rule(rule)
                                     << ") skipped: " << why
                                     << "; the next rule or the cost "
                                        "model decides (logged once)");
}

std::optional<Selection> from_rules(const Request& request, const CommunicatorState& state,
                                    const RuleSet* rules, bool explain) {
  if (rules == nullptr || !state.topology) return std::nullopt;
  for (std::size_t i = 0; i < rules->rules.size(); ++i) {
    const Rule& rule = rules->rules[i];
    if (!rule_matches(rule, request.kind, request.bytes(), *state.topology)) continue;
    if (rule.algorithm == Algorithm::kAuto) return std::nullopt;
    const CollectiveAlgorithm* algorithm = find_algorithm(rule.algorithm);
    std::string refusal;
    if (algorithm == nullptr) {
      refusal = std::string(to_string(rule.algorithm)) + " is not built into this library";
    } else if (const Support support = algorithm->supports(request, state); !support.ok) {
      refusal = support.reason;
    } else {
      Selection selection{algorithm, {}};
      if (explain) {
        selection.reason = "rules file " + rules->origin + " rule " + std::to_string(i) + " (" +
                           describe_rule(rule) + ")";
      }
      return selection;
    }
    warn_skipped_rule(*rules, i, rule, refusal);
  }
  return std::nullopt;
}

// The cheapest algorithm by the cost model among those that support the
// call; nullopt when none has an estimate.
std::optional<Selection> from_cost_model(const Request& request, const CommunicatorState& state,
                                         bool explain) {
  if (!state.topology) return std::nullopt;
  const CollectiveAlgorithm* best = nullptr;
  double best_seconds = 0.0;
  std::ostringstream candidates;
  for (const CollectiveAlgorithm* algorithm : all_algorithms()) {
    if (!algorithm->supports(request, state).ok) continue;
    const std::optional<double> seconds = algorithm->estimate_seconds(request, *state.topology);
    if (!seconds) continue;
    if (explain)
      candidates << (best == nullptr ? "" : ", ") << algorithm->name() << " "
                 << microseconds(*seconds);
    // Strictly cheaper: ties go to the earlier algorithm in the registry.
    if (best == nullptr || *seconds < best_seconds) {
      best = algorithm;
      best_seconds = *seconds;
    }
  }
  if (best == nullptr) return std::nullopt;
  Selection selection{best, {}};
  if (explain) {
    selection.reason = "cost model, " + shape_text(*state.topology) + ", " +
                       std::to_string(request.bytes()) + " B" +
                       (state.topology->node_count() > 1 ? ", " + describe_network(*state.topology)
                                                         : std::string()) +
                       ": " + candidates.str();
  }
  return selection;
}

}  // namespace

Selection select_algorithm(const Request& request, const CommunicatorState& state, bool explain) {
  return select_algorithm_with_rules(request, state, process_rules(), explain);
}

Selection select_algorithm_with_rules(const Request& request, const CommunicatorState& state,
                                      const RuleSet* rules, bool explain) {
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
  if (auto selection = from_rules(request, state, rules, explain)) return *selection;
  if (auto selection = from_cost_model(request, state, explain)) return *selection;

  const Algorithm first_choice = preferred(request);
  if (const CollectiveAlgorithm* algorithm = find_algorithm(first_choice)) {
    if (algorithm->supports(request, state).ok) {
      return Selection{algorithm, explain ? "size rule (COLLECTIVE_SMALL_MESSAGE_BYTES), " +
                                                std::to_string(request.bytes()) + " B"
                                          : std::string()};
    }
  }
  std::string refusals;
  for (const CollectiveAlgorithm* algorithm : all_algorithms()) {
    const Support support = algorithm->supports(request, state);
    if (support.ok) {
      return Selection{algorithm, explain ? "first algorithm that supports the call" : ""};
    }
    refusals += "; " + support.reason;
  }
  throw UnsupportedError(request.label(), state.rank,
                         "no algorithm can serve this call" + refusals);
}

Selection select_algorithm(const Request& request, const CommunicatorState& state) {
  if (log_level() >= LogLevel::kDebug) return select_algorithm(request, state, true);
  // The v-forms' estimates read their counts (all_gather_v's recv_counts
  // alike on every rank, the others' this rank's own): their decisions are
  // reused only for the same counts, compared whole, so that a repeated
  // call skips the model as the others do.
  const bool vector = traits_of(request.kind).geometry == CollectiveGeometry::kVector;
  auto same = [](std::span<const std::size_t> held, std::span<const std::size_t> given) {
    return std::equal(held.begin(), held.end(), given.begin(), given.end());
  };
  auto same_shape = [&](const SelectionMemo& memo) {
    return memo.algorithm != nullptr && memo.count == request.count && memo.kind == request.kind &&
           memo.type == request.type && memo.op == request.op && memo.memory == request.memory &&
           memo.requested == request.requested && memo.deterministic == request.deterministic &&
           (!vector || (same(memo.send_counts, request.send_counts) &&
                        same(memo.recv_counts, request.recv_counts)));
  };
  for (const SelectionMemo& memo : state.selection_memo) {
    if (same_shape(memo)) return Selection{memo.algorithm, {}};
  }
  Selection selection = select_algorithm(request, state, false);
  SelectionMemo& slot =
      state.selection_memo[state.selection_memo_next++ % state.selection_memo.size()];
  slot = SelectionMemo{
      selection.algorithm, request.kind,      request.count,         request.type, request.op,
      request.memory,      request.requested, request.deterministic, {},           {}};
  if (vector) {
    slot.send_counts.assign(request.send_counts.begin(), request.send_counts.end());
    slot.recv_counts.assign(request.recv_counts.begin(), request.recv_counts.end());
  }
  return selection;
}

std::optional<double> model_seconds(Algorithm algorithm, const Request& request,
                                    const Topology& topology) {
  const CollectiveAlgorithm* found = find_algorithm(algorithm);
  if (found == nullptr) return std::nullopt;
  return found->estimate_seconds(request, topology);
}

}  // namespace collective::internal
