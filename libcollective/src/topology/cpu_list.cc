#include "topology/cpu_list.h"

#include <algorithm>

namespace collective::internal {
namespace {

// The largest processor index believed: far beyond any machine, small
// enough that no sum overflows.
constexpr std::int64_t kMaxIndex = std::int64_t{1} << 40;

bool read_index(std::string_view& text, std::int64_t& value) {
  std::size_t used = 0;
  value = 0;
  while (used < text.size() && text[used] >= '0' && text[used] <= '9') {
    value = value * 10 + (text[used] - '0');
    if (value > kMaxIndex) return false;
    ++used;
  }
  text.remove_prefix(used);
  return used > 0;
}

}  // namespace

bool CpuListUnion::add(std::string_view list) {
  std::vector<std::pair<std::int64_t, std::int64_t>> read;
  while (!list.empty()) {
    std::int64_t first = 0;
    if (!read_index(list, first)) return false;
    std::int64_t last = first;
    if (!list.empty() && list.front() == '-') {
      list.remove_prefix(1);
      if (!read_index(list, last) || last < first) return false;
    }
    read.emplace_back(first, last);
    if (list.empty()) break;
    if (list.front() != ',') return false;
    list.remove_prefix(1);
    if (list.empty()) return false;  // a trailing comma
  }
  if (read.empty()) return false;
  ranges_.insert(ranges_.end(), read.begin(), read.end());
  return true;
}

std::int64_t CpuListUnion::count() const {
  auto sorted = ranges_;
  std::sort(sorted.begin(), sorted.end());
  std::int64_t total = 0;
  std::int64_t covered_to = -1;  // the highest index counted so far
  for (const auto& [first, last] : sorted) {
    const std::int64_t from = std::max(first, covered_to + 1);
    if (last >= from) {
      total += last - from + 1;
      covered_to = last;
    }
  }
  return total;
}

}  // namespace collective::internal
