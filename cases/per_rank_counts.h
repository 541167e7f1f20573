// The uneven-count pattern of the collectives with per-rank counts (the
// v-variants): rank 0's count is `uneven` times the base count, every other
// rank's the base count (uneven 0: rank 0 has none). Blocks are laid out
// in rank order with one element between them, which the call must leave
// alone: displacements are exercised, and a write past a block is seen.
#pragma once

#include <cstddef>
#include <vector>

#include "value_pattern.h"

namespace collective::cases {

struct Shape;

// The count of `rank` in the pattern.
std::size_t count_of(const Shape& shape, std::size_t count, int rank);
// Every rank's count, in rank order.
std::vector<std::size_t> counts_of(const Shape& shape, std::size_t count);
// Displacements of blocks of these counts, one element apart.
std::vector<std::size_t> gapped_displacements(const std::vector<std::size_t>& counts);
// Elements a buffer of those blocks and gaps holds.
std::size_t gapped_elements(const std::vector<std::size_t>& counts);
// The sum of the counts.
std::size_t total(const std::vector<std::size_t>& counts);
// The gap after each block, as parts that must still hold the sentinel.
void add_gaps(const std::vector<std::size_t>& counts, const std::vector<std::size_t>& displacements,
              std::vector<ResultPart>& parts);

}  // namespace collective::cases
