#include "rules_file.h"

#include <iterator>
#include <map>

namespace collective::bench {
namespace {

double score(const SizeRow& row) {
  double total = 0;
  for (const PlacementResult* p : {&row.out_of_place, &row.in_place}) {
    if (p->measured) total += p->time.p50_us;
  }
  return total;
}

}  // namespace

std::vector<Rule> derive_rules(const std::vector<SizeRow>& rows, int nodes,
                               std::optional<int> ranks_per_node) {
  std::vector<Rule> rules;
  // Per collective (in the order first seen), per block size: the winner.
  std::vector<CollectiveKind> order;
  std::map<CollectiveKind, std::map<std::uint64_t, std::pair<double, Algorithm>>> best;
  for (const SizeRow& row : rows) {
    if (row.requested == Algorithm::kAuto) continue;
    if (!best.count(row.collective)) order.push_back(row.collective);
    const std::uint64_t block_bytes = static_cast<std::uint64_t>(row.count) * row.element_bytes;
    auto& winners = best[row.collective];
    const double time = score(row);
    const auto found = winners.find(block_bytes);
    if (found == winners.end() || time < found->second.first) {
      winners[block_bytes] = {time, row.requested};
    }
  }
  for (CollectiveKind collective : order) {
    const auto& winners = best[collective];
    std::uint64_t range_start = 0;
    for (auto it = winners.begin(); it != winners.end(); ++it) {
      const auto next = std::next(it);
      const bool last = next == winners.end();
      if (!last && next->second.second == it->second.second) continue;
      Rule rule;
      rule.collective = collective;
      rule.nodes = nodes;
      rule.ranks_per_node = ranks_per_node;
      rule.min_bytes = range_start;
      rule.max_bytes = last ? kUnboundedBytes : it->first;
      rule.algorithm = it->second.second;
      rules.push_back(rule);
      range_start = it->first + 1;
    }
  }
  return rules;
}

void write_rules(std::ostream& out, const std::vector<Rule>& rules) {
  out << format_selection_rules(rules);
}

}  // namespace collective::bench
