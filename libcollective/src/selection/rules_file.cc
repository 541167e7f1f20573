#include "selection/rules_file.h"

#include "core/env_params.h"

#include <cstdlib>
#include <functional>
#include <mutex>
#include <sstream>

#include "collective/errors.h"
#include "core/env_params.h"
#include "topology/topology_file.h"
#include "util/json.h"

namespace collective::internal {
namespace {

constexpr std::int64_t kMaxRuleCount = 1 << 24;  // nodes or ranks per node

Rule parse_rule(const json::Value& value, const std::string& where) {
  json::ObjectReader reader(value, where);
  Rule rule;
  const std::string collective = reader.required_string("collective");
  const auto kind = parse_collective_kind(collective);
  if (!kind) {
    reader.fail("\"collective\" is " + json::json_quote(collective) +
                "; expected all_reduce, reduce_scatter, all_gather, broadcast, reduce or barrier");
  }
  rule.collective = *kind;
  if (reader.has("nodes"))
    rule.nodes = static_cast<int>(reader.integer("nodes", 0, 1, kMaxRuleCount));
  if (reader.has("ranks_per_node")) {
    rule.ranks_per_node = static_cast<int>(reader.integer("ranks_per_node", 0, 1, kMaxRuleCount));
  }
  rule.min_bytes = static_cast<std::uint64_t>(reader.integer("min_bytes", 0, 0, INT64_MAX));
  rule.max_bytes = reader.has("max_bytes")
                       ? static_cast<std::uint64_t>(reader.integer("max_bytes", 0, 0, INT64_MAX))
                       : kUnboundedBytes;
  if (rule.min_bytes > rule.max_bytes) {
    reader.fail("min_bytes " + std::to_string(rule.min_bytes) + " is above max_bytes " +
                std::to_string(rule.max_bytes));
  }
  const std::string algorithm = reader.required_string("algorithm");
  const auto parsed = parse_algorithm(algorithm);
  if (!parsed) {
    reader.fail("\"algorithm\" is " + json::json_quote(algorithm) +
                "; expected auto, ring, recursive_doubling, mpi, shared_memory, hierarchical or "
                "nccl");
  }
  rule.algorithm = *parsed;
  reader.finish();
  return rule;
}

struct Loaded {
  std::once_flag once;
  std::optional<RuleSet> rules;
  std::string error;  // set when the file could not be used
  std::uint64_t fingerprint = 0;
};

Loaded& loaded() {
  static Loaded state;
  return state;
}

}  // namespace

bool rule_matches(const Rule& rule, CollectiveKind kind, std::uint64_t bytes,
                  const Topology& topology) {
  if (kind != rule.collective || bytes < rule.min_bytes || bytes > rule.max_bytes) return false;
  if (rule.nodes && *rule.nodes != topology.node_count()) return false;
  if (rule.ranks_per_node && *rule.ranks_per_node != topology.max_ranks_per_node()) return false;
  return true;
}

std::string describe_rule(const Rule& rule) {
  std::ostringstream out;
  out << to_string(rule.collective) << " " << rule.min_bytes << "..";
  if (rule.max_bytes >= kUnboundedBytes) {
    out << "any";
  } else {
    out << rule.max_bytes;
  }
  out << " B";
  if (rule.nodes) out << ", " << *rule.nodes << (*rule.nodes == 1 ? " node" : " nodes");
  if (rule.ranks_per_node) out << ", " << *rule.ranks_per_node << " ranks per node";
  out << " -> " << to_string(rule.algorithm);
  return out.str();
}

RuleSet parse_rules(std::string_view text, const std::string& origin) {
  return RuleSet{origin, parse_selection_rules(text, origin)};
}

}  // namespace collective::internal

namespace collective {

std::vector<SelectionRule> parse_selection_rules(std::string_view text, const std::string& origin) {
  using namespace internal;
  const json::Value document = json::parse(text, origin);
  json::ObjectReader reader(document, origin);
  reader.integer("version", 1, 1, 1);
  if (!reader.has("version")) reader.fail("\"version\": 1 is required");
  const json::Value* rules = reader.required_array("rules");
  reader.finish();
  std::vector<SelectionRule> parsed;
  for (std::size_t i = 0; i < rules->items().size(); ++i) {
    parsed.push_back(parse_rule(rules->items()[i], origin + ": rule " + std::to_string(i)));
  }
  return parsed;
}

std::string format_selection_rules(const std::vector<SelectionRule>& rules) {
  std::ostringstream out;
  out << "{\n  \"version\": 1,\n  \"rules\": [";
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const SelectionRule& rule = rules[i];
    out << (i == 0 ? "\n" : ",\n")
        << "    {\"collective\": " << json_quote(to_string(rule.collective));
    if (rule.nodes) out << ", \"nodes\": " << *rule.nodes;
    if (rule.ranks_per_node) out << ", \"ranks_per_node\": " << *rule.ranks_per_node;
    out << ", \"min_bytes\": " << rule.min_bytes << ", \"max_bytes\": " << rule.max_bytes
        << ", \"algorithm\": " << json_quote(to_string(rule.algorithm)) << "}";
  }
  out << (rules.empty() ? "]\n}\n" : "\n  ]\n}\n");
  return out.str();
}

}  // namespace collective

namespace collective::internal {

const RuleSet* process_rules() {
  Loaded& state = loaded();
  std::call_once(state.once, [&] {
    // Loaded when the first communicator is made (after env_params()
    // accepted every variable), not when the variables are parsed.
    const std::string path = env_params().rules_file;
    if (path.empty()) return;
    try {
      const std::string text = read_text_file(path, "COLLECTIVE_RULES_FILE");
      state.rules = parse_rules(text, path);
      state.fingerprint = std::hash<std::string>{}(text) | 1;
    } catch (const Error& error) {
      state.error = error.what();
    }
  });
  if (!state.error.empty()) {
    throw InvalidArgumentError("COLLECTIVE_RULES_FILE", -1, state.error);
  }
  return state.rules ? &*state.rules : nullptr;
}

std::uint64_t process_rules_fingerprint() {
  process_rules();
  return loaded().fingerprint;
}

}  // namespace collective::internal
