#include "per_rank_counts.h"

#include <numeric>

#include "collective_case.h"

namespace collective::cases {

std::size_t count_of(const Shape& shape, std::size_t count, int rank) {
  return rank == 0 ? shape.uneven * count : count;
}

std::vector<std::size_t> counts_of(const Shape& shape, std::size_t count) {
  std::vector<std::size_t> counts(static_cast<std::size_t>(shape.ranks));
  for (int q = 0; q < shape.ranks; ++q)
    counts[static_cast<std::size_t>(q)] = count_of(shape, count, q);
  return counts;
}

std::vector<std::size_t> gapped_displacements(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> displacements(counts.size());
  std::size_t next = 0;
  for (std::size_t q = 0; q < counts.size(); ++q) {
    displacements[q] = next;
    next += counts[q] + 1;
  }
  return displacements;
}

std::size_t gapped_elements(const std::vector<std::size_t>& counts) {
  return total(counts) + counts.size();
}

std::size_t total(const std::vector<std::size_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), std::size_t{0});
}

void add_gaps(const std::vector<std::size_t>& counts, const std::vector<std::size_t>& displacements,
              std::vector<ResultPart>& parts) {
  for (std::size_t q = 0; q < counts.size(); ++q) {
    parts.push_back(ResultPart{displacements[q] + counts[q], 1, kUntouched, 0});
  }
}

}  // namespace collective::cases
