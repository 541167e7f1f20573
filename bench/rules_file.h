// --generate-rules: from a sweep of every candidate algorithm, the fastest
// per size, merged into size ranges, written as the rules file AUTO loads
// (COLLECTIVE_RULES_FILE), in the library's format (collective/in_tree/selection_rules.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "collective/in_tree/selection_rules.h"
#include "results.h"

namespace collective::bench {

// The rule and its file format are the library's (collective/in_tree/selection_rules.h).
using Rule = SelectionRule;

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
