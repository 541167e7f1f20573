#include "byte_counts.h"

#include <algorithm>
#include <memory>

namespace collective::pmpi {
namespace {

std::vector<std::size_t>& scratch(CountsSlot slot) {
  thread_local std::vector<std::size_t> arrays[4];
  return arrays[static_cast<int>(slot)];
}

// values[0..n) times `unit` into `bytes`; false at the first negative value.
bool convert(const int* values, int n, std::size_t unit, std::vector<std::size_t>& bytes) {
  bytes.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (values[i] < 0) return false;
    bytes[static_cast<std::size_t>(i)] = static_cast<std::size_t>(values[i]) * unit;
  }
  return true;
}

}  // namespace

std::span<const std::size_t> to_bytes(const int* values, int n, std::size_t unit, CountsSlot slot,
                                      const char*& reason) {
  std::vector<std::size_t>& bytes = scratch(slot);
  if (!convert(values, n, unit, bytes)) {
    reason = slot == CountsSlot::kSendCounts || slot == CountsSlot::kRecvCounts
                 ? "negative count"
                 : "negative displacement";
    return {};
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

namespace {

struct RememberedBlocks {
  std::vector<int> counts, displacements;  // as the caller gave them
  std::size_t unit = 0;
  bool valid = false;
  std::vector<std::size_t> byte_counts, byte_displacements;
  Extent extent;
  bool overlap = false;

  bool repeats(const int* given_counts, const int* given_displacements, int n,
               std::size_t given_unit) const {
    const auto size = static_cast<std::size_t>(n);
    return valid && unit == given_unit && counts.size() == size &&
           std::equal(counts.begin(), counts.end(), given_counts) &&
           std::equal(displacements.begin(), displacements.end(), given_displacements);
  }
};

}  // namespace

ReceiveBlocks receive_blocks(const int* counts, const int* displacements, int n, std::size_t unit,
                             const char*& reason) {
  // A plain pointer per thread: no wrapper or guard on each access (those
  // cost more than the comparison); its owner frees the blocks at the
  // thread's exit.
  thread_local RememberedBlocks* remembered = nullptr;
  if (remembered == nullptr) {
    thread_local std::unique_ptr<RememberedBlocks> owner;
    owner = std::make_unique<RememberedBlocks>();
    remembered = owner.get();
  }
  RememberedBlocks& last = *remembered;
  if (!last.repeats(counts, displacements, n, unit)) {
    last.valid = false;
    if (!convert(counts, n, unit, last.byte_counts)) {
      reason = "negative count";
      return {};
    }
    if (!convert(displacements, n, unit, last.byte_displacements)) {
      reason = "negative displacement";
      return {};
    }
    const auto size = static_cast<std::size_t>(n);
    last.counts.assign(counts, counts + size);
    last.displacements.assign(displacements, displacements + size);
    last.unit = unit;
    last.extent = extent_of(last.byte_counts, last.byte_displacements);
    last.overlap = blocks_overlap(last.byte_counts, last.byte_displacements);
    last.valid = true;
  }
  return {last.byte_counts, last.byte_displacements, last.extent, last.overlap};
}

}  // namespace collective::pmpi
