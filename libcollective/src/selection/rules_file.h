// AUTO's overrides from a file (COLLECTIVE_RULES_FILE), as collective_bench
// --generate-rules writes them:
//
//   {"version": 1, "rules": [
//     {"collective": "all_reduce", "nodes": 1, "ranks_per_node": 2,
//      "min_bytes": 0, "max_bytes": 65536, "algorithm": "recursive_doubling"},
//     ...]}
//
// nodes and ranks_per_node are optional (absent: any); min_bytes defaults
// to 0 and max_bytes to no limit; ranges are inclusive; bytes are those of
// Request::bytes() (the count argument times the element size); the first
// matching rule wins. "algorithm": "auto" hands the range to the cost model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collective/algorithm.h"
#include "collective/topology.h"

namespace collective::internal {

struct Rule {
  CollectiveKind collective = CollectiveKind::kAllReduce;
  std::optional<int> nodes;
  std::optional<int> ranks_per_node;
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = UINT64_MAX;
  Algorithm algorithm = Algorithm::kAuto;

  bool matches(CollectiveKind kind, std::uint64_t bytes, const Topology& topology) const;
  std::string describe() const;  // "all_reduce 0..65536 B, 1 node(s), 2 ranks per node"
};

struct RuleSet {
  std::string origin;  // the file
  std::vector<Rule> rules;
};

// Parses a rules document; InvalidArgumentError names `origin`, the rule
// and the field for anything malformed or unknown.
RuleSet parse_rules(std::string_view text, const std::string& origin);

// The process's rules from COLLECTIVE_RULES_FILE (read once), or nullptr
// when the variable is unset or empty. Throws InvalidArgumentError for an
// unreadable or malformed file (on every call).
const RuleSet* process_rules();

// A fingerprint of the process's rules (0 without a file), so that ranks can
// check they all read the same file.
std::uint64_t process_rules_fingerprint();

}  // namespace collective::internal
