#include "byte_counts.h"

#include <algorithm>

namespace collective::pmpi {
namespace {

std::vector<std::size_t>& scratch(CountsSlot slot) {
  thread_local std::vector<std::size_t> arrays[4];
  return arrays[static_cast<int>(slot)];
}

}  // namespace

std::span<const std::size_t> to_bytes(const int* values, int n, std::size_t unit, CountsSlot slot,
                                      const char*& reason) {
  std::vector<std::size_t>& bytes = scratch(slot);
  bytes.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (values[i] < 0) {
      reason = slot == CountsSlot::kSendCounts || slot == CountsSlot::kRecvCounts
                   ? "negative count"
                   : "negative displacement";
      return {};
    }
    bytes[static_cast<std::size_t>(i)] = static_cast<std::size_t>(values[i]) * unit;
  }
  return bytes;
}

bool blocks_overlap(std::span<const std::size_t> counts,
                    std::span<const std::size_t> displacements) {
  thread_local std::vector<std::size_t> order;
  order.clear();
  for (std::size_t q = 0; q < counts.size(); ++q) {
    if (counts[q] > 0) order.push_back(q);
  }
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return displacements[a] < displacements[b]; });
  for (std::size_t i = 1; i < order.size(); ++i) {
    if (displacements[order[i - 1]] + counts[order[i - 1]] > displacements[order[i]]) return true;
  }
  return false;
}

Extent extent_of(std::span<const std::size_t> counts, std::span<const std::size_t> displacements) {
  Extent extent;
  bool any = false;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    const std::size_t begin = displacements[i], end = displacements[i] + counts[i];
    extent.begin = any ? std::min(extent.begin, begin) : begin;
    extent.end = any ? std::max(extent.end, end) : end;
    any = true;
  }
  return extent;
}

}  // namespace collective::pmpi
