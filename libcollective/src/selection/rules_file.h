// The process's rules file (COLLECTIVE_RULES_FILE) and how a rule applies
// to a call. The format and the rule itself: collective/in_tree/selection_rules.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collective/algorithm.h"
#include "collective/in_tree/selection_rules.h"
#include "collective/topology.h"

namespace collective::internal {

using Rule = ::collective::SelectionRule;

bool rule_matches(const Rule& rule, CollectiveKind kind, std::uint64_t bytes,
                  const Topology& topology);
// "all_reduce 0..65536 B, 1 node, 2 ranks per node -> ring"
std::string describe_rule(const Rule& rule);

struct RuleSet {
  std::string origin;  // the file
  std::vector<Rule> rules;
};

// parse_selection_rules, remembering the file.
RuleSet parse_rules(std::string_view text, const std::string& origin);

// The process's rules from COLLECTIVE_RULES_FILE (read once), or nullptr
// when the variable is unset or empty. Throws InvalidArgumentError for an
// unreadable or malformed file (on every call).
const RuleSet* process_rules();

// A fingerprint of the process's rules (0 without a file), so that ranks can
// check they all read the same file.
std::uint64_t process_rules_fingerprint();

}  // namespace collective::internal
