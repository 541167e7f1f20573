#include "rules_file.h"

#include <iterator>
#include <map>

#include "json_writer.h"

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
  JsonWriter json(out);
  json.begin_object();
  json.field("version", 1);
  json.key("rules");
  json.begin_array();
  for (const Rule& rule : rules) {
    json.begin_object();
    json.field("collective", std::string(to_string(rule.collective)));
    if (rule.nodes) json.field("nodes", *rule.nodes);
    if (rule.ranks_per_node) json.field("ranks_per_node", *rule.ranks_per_node);
    json.field("min_bytes", rule.min_bytes);
    json.field("max_bytes", rule.max_bytes);
    json.field("algorithm", std::string(to_string(rule.algorithm)));
    json.end_object();
  }
  json.end_array();
  json.end_object();
}

}  // namespace collective::bench
