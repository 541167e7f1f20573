#include "core/agreed_params.h"

#include <map>
#include <sstream>

#include "collective/errors.h"
#include "core/rank_list.h"

namespace collective::internal {
namespace {

// NAME -> value, in the text's order.
std::vector<std::pair<std::string, std::string>> parse_lines(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t equals = line.find('=');
    if (equals == std::string::npos) continue;
    lines.emplace_back(line.substr(0, equals), line.substr(equals + 1));
  }
  return lines;
}

}  // namespace

std::string agreed_parameters_text(const EnvParams& params) {
  std::ostringstream out;
  // The cross-rank check is a message exchange of its own: a rank that
  // skips it leaves the others waiting for its fingerprint.
  out << "COLLECTIVE_VALIDATE=" << (params.validate ? 1 : 0) << "\n";
  // Which algorithm runs: ranks running different ones never meet.
  out << "COLLECTIVE_ALGORITHM="
      << (params.forced_algorithm ? to_string(*params.forced_algorithm) : "auto") << "\n";
  // Which algorithms may serve a reduction, and the protocol they run.
  out << "COLLECTIVE_DETERMINISTIC=" << (params.deterministic ? 1 : 0) << "\n";
  out << "COLLECTIVE_SMALL_MESSAGE_BYTES=" << params.small_message_bytes << "\n";
  out << "COLLECTIVE_SHM_SMALL_BYTES=" << params.shm_small_bytes << "\n";
  // Message and slot sizes: a receiver sized for one segment gets another.
  out << "COLLECTIVE_RING_SEGMENT_BYTES=" << params.ring_segment_bytes << "\n";
  out << "COLLECTIVE_RING_SEGMENT_BYTES_ACROSS_NODES=" << params.ring_segment_bytes_across_nodes
      << "\n";
  out << "COLLECTIVE_MAX_MESSAGE_BYTES=" << params.max_message_bytes << "\n";
  out << "COLLECTIVE_SHM_SLOT_BYTES=" << params.shm_slot_bytes << "\n";
  // The ranks of a node share one handoff decision per size class.
  out << "COLLECTIVE_SHM_HANDOFF="
      << (!params.shm_handoff                             ? "auto"
          : *params.shm_handoff == Handoff::kThroughCache ? "cache"
                                                          : "memory")
      << "\n";
  // The nccl algorithm's plan (flat or hierarchical, which ranks form a node).
  out << "COLLECTIVE_NCCL_HIERARCHICAL=" << (params.nccl_hierarchical_off ? "off" : "auto") << "\n";
  out << "COLLECTIVE_NCCL_RANKS_PER_NODE=" << params.nccl_ranks_per_node << "\n";
  return out.str();
}

void check_agreed_parameters(const std::vector<std::string>& per_rank, const char* operation,
                             int rank) {
  if (per_rank.empty()) return;
  const auto reference = parse_lines(per_rank.front());
  std::vector<std::vector<std::pair<std::string, std::string>>> all;
  for (const std::string& text : per_rank) all.push_back(parse_lines(text));
  std::string differences;
  for (std::size_t p = 0; p < reference.size(); ++p) {
    const std::string& name = reference[p].first;
    // value -> ranks holding it, in order of first appearance.
    std::vector<std::pair<std::string, std::vector<int>>> groups;
    for (std::size_t r = 0; r < all.size(); ++r) {
      const std::string value =
          p < all[r].size() && all[r][p].first == name ? all[r][p].second : "(not reported)";
      auto found = groups.begin();
      while (found != groups.end() && found->first != value) ++found;
      if (found == groups.end()) {
        groups.push_back({value, {static_cast<int>(r)}});
      } else {
        found->second.push_back(static_cast<int>(r));
      }
    }
    if (groups.size() < 2) continue;
    if (!differences.empty()) differences += "; ";
    differences += name + " differs: ";
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (g > 0) differences += ", ";
      differences += groups[g].first + " on " + rank_list(groups[g].second);
    }
  }
  if (differences.empty()) return;
  throw InvalidArgumentError(
      operation, rank,
      differences +
          ". These parameters must be the same on every rank "
          "(docs/parameters.md); set them alike in every rank's environment");
}

}  // namespace collective::internal
