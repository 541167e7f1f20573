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

constexpr std::int64_t kMaxCount = 1 << 24;  // nodes or ranks per node

Rule parse_rule(const json::Value& value, const std::string& where) {
  json::ObjectReader reader(value, where);
  Rule rule;
  const std::string collective = reader.required_string("collective");
  const auto kind = parse_collective_kind(collective);
  if (!kind) {
    reader.fail("\"collective\" is " + json::quote(collective) +
                "; expected all_reduce, reduce_scatter, all_gather, broadcast, reduce or barrier");
  }
  rule.collective = *kind;
  if (reader.has("nodes")) rule.nodes = static_cast<int>(reader.integer("nodes", 0, 1, kMaxCount));
  if (reader.has("ranks_per_node")) {
    rule.ranks_per_node = static_cast<int>(reader.integer("ranks_per_node", 0, 1, kMaxCount));
  }
  rule.min_bytes = static_cast<std::uint64_t>(reader.integer("min_bytes", 0, 0, INT64_MAX));
  rule.max_bytes = reader.has("max_bytes")
                       ? static_cast<std::uint64_t>(reader.integer("max_bytes", 0, 0, INT64_MAX))
                       : UINT64_MAX;
  if (rule.min_bytes > rule.max_bytes) {
    reader.fail("min_bytes " + std::to_string(rule.min_bytes) + " is above max_bytes " +
                std::to_string(rule.max_bytes));
  }
  const std::string algorithm = reader.required_string("algorithm");
  const auto parsed = parse_algorithm(algorithm);
  if (!parsed) {
    reader.fail("\"algorithm\" is " + json::quote(algorithm) +
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

bool Rule::matches(CollectiveKind kind, std::uint64_t bytes, const Topology& topology) const {
  if (kind != collective || bytes < min_bytes || bytes > max_bytes) return false;
  if (nodes && *nodes != topology.node_count()) return false;
  if (ranks_per_node && *ranks_per_node != topology.max_ranks_per_node()) return false;
  return true;
}

std::string Rule::describe() const {
  std::ostringstream out;
  out << to_string(collective) << " " << min_bytes << "..";
  if (max_bytes == UINT64_MAX) {
    out << "any";
  } else {
    out << max_bytes;
  }
  out << " B";
  if (nodes) out << ", " << *nodes << (*nodes == 1 ? " node" : " nodes");
  if (ranks_per_node) out << ", " << *ranks_per_node << " ranks per node";
  out << " -> " << to_string(algorithm);
  return out.str();
}

RuleSet parse_rules(std::string_view text, const std::string& origin) {
  const json::Value document = json::parse(text, origin);
  json::ObjectReader reader(document, origin);
  reader.integer("version", 1, 1, 1);
  if (!reader.has("version")) reader.fail("\"version\": 1 is required");
  const json::Value* rules = reader.required_array("rules");
  reader.finish();
  RuleSet set;
  set.origin = origin;
  for (std::size_t i = 0; i < rules->items().size(); ++i) {
    set.rules.push_back(parse_rule(rules->items()[i], origin + ": rule " + std::to_string(i)));
  }
  return set;
}

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
