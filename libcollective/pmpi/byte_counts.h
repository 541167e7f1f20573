// MPI's int counts and displacements (in elements of a datatype) as the
// byte counts and displacements of libcollective's v-collectives, in
// per-thread scratch arrays that keep their capacity between calls, so a
// served v-collective allocates nothing once they have grown.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace collective::pmpi {

// Which scratch array: a call may hold all four at once.
enum class CountsSlot : int {
  kSendCounts = 0,
  kSendDisplacements,
  kRecvCounts,
  kRecvDisplacements
};

// values[0..n) times `unit` bytes, in this thread's array `slot`; nullopt-like
// empty span with `reason` set when a value is negative (MPI then reports
// its own error, or a negative displacement it accepts is left to it).
std::span<const std::size_t> to_bytes(const int* values, int n, std::size_t unit, CountsSlot slot,
                                      const char*& reason);

// The sum of counts[0..n) (already in bytes).
inline std::size_t total_of(std::span<const std::size_t> counts) {
  std::size_t total = 0;
  for (std::size_t count : counts) total += count;
  return total;
}

// Whether two blocks with non-zero counts overlap (a receive buffer's
// blocks: MPI leaves writing one place twice undefined, and the library
// refuses it, so such a call goes to PMPI_). Sorts in per-thread scratch.
bool blocks_overlap(std::span<const std::size_t> counts,
                    std::span<const std::size_t> displacements);

// The bytes [lowest displacement, highest displacement + count) spans over
// the blocks with a non-zero count (0 when every count is 0).
struct Extent {
  std::size_t begin = 0;
  std::size_t end = 0;
};
Extent extent_of(std::span<const std::size_t> counts, std::span<const std::size_t> displacements);

// A receive buffer's blocks in bytes, as MPI_Allgatherv's int counts and
// displacements give them, with their extent and whether two overlap.
struct ReceiveBlocks {
  std::span<const std::size_t> counts;
  std::span<const std::size_t> displacements;
  Extent extent;
  bool overlap = false;
};

// The blocks of counts[0..n) and displacements[0..n) in units of `unit`
// bytes, kept per thread with the arrays they came from: a call whose
// arrays and unit repeat the last one's (compared by value) gets the same
// blocks without converting, sorting and scanning again (a small
// MPI_Allgatherv loop: about 370 instructions a call). Empty blocks with
// `reason` set when a value is negative.
ReceiveBlocks receive_blocks(const int* counts, const int* displacements, int n, std::size_t unit,
                             const char*& reason);

}  // namespace collective::pmpi
