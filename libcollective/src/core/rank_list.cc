#include "core/rank_list.h"

namespace collective::internal {

std::string rank_list(const std::vector<int>& ranks) {
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    runs.push_back(j == i ? std::to_string(ranks[i])
                          : std::to_string(ranks[i]) + "-" + std::to_string(ranks[j]));
    i = j + 1;
  }
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t k = 0; k < runs.size(); ++k) {
    if (k > 0) text += k + 1 == runs.size() ? " and " : ", ";
    text += runs[k];
  }
  return text;
}

}  // namespace collective::internal
