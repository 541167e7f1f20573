// Inputs whose results are exact, and the checks that compare every element
// of a result against them.
//
// Every input is a small integer chosen by a hash of (rank, element index),
// so a result at the wrong index, from the wrong rank, or missing a rank's
// contribution, differs. The values are small enough that every partial
// sum and product is exact in every type, float16 and bfloat16 included
// (see docs/performance.md, "Checking"), so expected values are exact and
// compared bit for bit (floats by value).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "collective/types.h"

namespace collective::bench {

// Part of a buffer and the global index of its first element: for an input
// or output of all_reduce the index in the buffer, for reduce_scatter and
// all_gather the index in the whole (all ranks') buffer.
struct Region {
  void* data = nullptr;
  std::size_t count = 0;
  std::uint64_t first_index = 0;
};

// Which rank's input an output element of a copying collective comes from:
// the root for broadcast, index / block for all_gather.
struct CopySource {
  int root = -1;
  std::uint64_t block = 1;
  int rank_of(std::uint64_t index) const {
    return root >= 0 ? root : static_cast<int>(index / block);
  }
};

struct WrongElements {
  std::uint64_t count = 0;
  std::uint64_t first_index = 0;  // valid when count > 0
  std::string first_expected;
  std::string first_actual;
};

class ValuePattern {
 public:
  // Inputs for all_reduce, reduce_scatter and reduce with `op` over `ranks`.
  static ValuePattern reduction(DataType type, ReduceOp op, int ranks);
  // Inputs for broadcast and all_gather.
  static ValuePattern copy(DataType type, int ranks);

  DataType type() const { return type_; }
  ReduceOp op() const { return op_; }
  int ranks() const { return ranks_; }

  // The input of `rank` at global element `index`, as an integer.
  std::int64_t input(int rank, std::uint64_t index) const;

 private:
  ValuePattern(DataType type, ReduceOp op, int ranks, bool reduction);
  DataType type_;
  ReduceOp op_;
  int ranks_;
  bool reduction_;
  bool is_unsigned_;
};

// Writes `rank`'s inputs into the region.
void fill_inputs(const ValuePattern& pattern, int rank, Region region);
// Writes a value no correct result holds (NaN, or the type's maximum), so
// an element the collective never wrote is counted wrong.
void fill_sentinel(DataType type, Region region);
// Values a repeated in-place reduction leaves unchanged (0 for sum, else 1):
// timed iterations neither overflow nor slow down on denormals.
void fill_timing_values(DataType type, ReduceOp op, Region region);

// Every element of `result` against op over all ranks' inputs.
WrongElements check_reduction(const ValuePattern& pattern, Region result);
// Every element of `result` against the input of the rank it comes from.
WrongElements check_copy(const ValuePattern& pattern, Region result, CopySource source);

// --inject-error: changes one element so that it no longer matches.
void corrupt_element(DataType type, Region region, std::size_t index);

}  // namespace collective::bench
