// --generate-rules: from a sweep of every candidate algorithm, the fastest
// per size, merged into size ranges, written as the rules file AUTO loads
// (COLLECTIVE_RULES_FILE). The format, agreed with selection:
//   {"version": 1, "rules": [{"collective": "all_reduce", "nodes": 1,
//     "ranks_per_node": 2, "min_bytes": 0, "max_bytes": 65536,
//     "algorithm": "recursive_doubling"}, ...]}
// nodes and ranks_per_node are optional (any); ranges are inclusive; the
// first matching rule wins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "results.h"

namespace collective::bench {

struct Rule {
  CollectiveKind collective = CollectiveKind::kAllReduce;
  std::optional<int> nodes;
  std::optional<int> ranks_per_node;
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = 0;
  Algorithm algorithm = Algorithm::kRing;
};

// The largest max_bytes written: the last measured winner extends to every
// larger size. 2^63 - 1 fits every JSON reader's integers.
inline constexpr std::uint64_t kUnboundedBytes = 9223372036854775807ull;

// Rules from rows of concrete algorithms (requested != auto). Bytes are what
// the library's AUTO sees: count x element size of one rank's block (for
// all_reduce, broadcast and reduce the whole buffer). Per size the winner
// has the least sum of median times over the placements measured; runs of
// sizes with one winner merge into a range from just above the previous
// measured size (0 for the first) up to its largest size (unbounded for
// the last).
std::vector<Rule> derive_rules(const std::vector<SizeRow>& rows, int nodes,
                               std::optional<int> ranks_per_node);

void write_rules(std::ostream& out, const std::vector<Rule>& rules);

}  // namespace collective::bench
