// AUTO's rules: which algorithm serves which sizes, read from the file named
// by COLLECTIVE_RULES_FILE and written by `collective_bench --generate-rules`
// (docs/algorithms.md). The format:
//
//   {"version": 1, "rules": [
//     {"collective": "all_reduce", "nodes": 1, "ranks_per_node": 2,
//      "min_bytes": 0, "max_bytes": 65536, "algorithm": "recursive_doubling"},
//     ...]}
//
// nodes and ranks_per_node are optional (absent: any); min_bytes defaults to
// 0 and max_bytes to kUnboundedBytes; ranges are inclusive; bytes are the
// count argument times the element size; the first matching rule wins.
// "algorithm": "auto" hands the range to the cost model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collective/algorithm.h"
#include "collective/in_tree/export.h"

namespace collective {

// The largest size a rule can name, 2^63 - 1: it fits every JSON reader's
// integers. A rule up to it has no upper bound.
inline constexpr std::uint64_t kUnboundedBytes = 9223372036854775807ull;

struct SelectionRule {
  CollectiveKind collective = CollectiveKind::kAllReduce;
  std::optional<int> nodes;
  std::optional<int> ranks_per_node;
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = kUnboundedBytes;
  Algorithm algorithm = Algorithm::kAuto;

  bool operator==(const SelectionRule&) const = default;
};

// Parses a rules document. InvalidArgumentError names `origin`, the rule and
// the field for anything malformed or unknown.
COLLECTIVE_IN_TREE_API std::vector<SelectionRule> parse_selection_rules(std::string_view text,
                                                                        const std::string& origin);

// The document parse_selection_rules reads back as `rules`.
COLLECTIVE_IN_TREE_API std::string format_selection_rules(const std::vector<SelectionRule>& rules);

}  // namespace collective
