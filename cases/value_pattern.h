// Inputs whose results are exact, and the checks that compare every element
// of a result against them.
//
// Every input is a small integer chosen by a hash of (rank, element index),
// so a result at the wrong index, from the wrong rank, or missing a rank's
// contribution, differs. The values are small enough that every partial
// sum and product is exact in every type, float16 and bfloat16 included
// (see docs/performance.md, "Checking"), so expected values are exact and
// compared bit for bit (floats by value).
//
// The hash reads the index modulo kValuePeriod, a prime: inputs and
// expected values repeat with that period, so a fill or a check converts
// one period and copies or compares bytes along the rest (a sweep over
// millions of elements stays quick). A block misplaced by a multiple of
// the period would go unseen; no count the sweep or the bench uses is one
// (counts of whole powers of two never are, the period being odd).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collective/types.h"

namespace collective::cases {

inline constexpr std::uint64_t kValuePeriod = 4093;  // the largest prime below 2^12

// Part of a buffer and the global index of its first element: for an input
// or output of all_reduce the index in the buffer, for reduce_scatter and
// all_gather the index in the whole (all ranks') buffer.
struct Region {
  void* data = nullptr;
  std::size_t count = 0;
  std::uint64_t first_index = 0;
};

// Marks a result part that holds op over every rank's inputs.
inline constexpr int kReducedOverRanks = -1;
// Marks a result part the call must leave alone: it still holds what
// fill_sentinel wrote (the gaps between a v-variant's blocks).
inline constexpr int kUntouched = -2;

// A run of result elements that come from one place: elements offset ..
// offset+count-1 of the result buffer hold the input of `from_rank` (or
// the reduction over every rank, or the sentinel) at indices first_index,
// first_index+1, ...
struct ResultPart {
  std::size_t offset = 0;
  std::size_t count = 0;
  int from_rank = kReducedOverRanks;
  std::uint64_t first_index = 0;
};

// Where a rank's result lies and what each of its parts must hold.
struct ResultLayout {
  void* data = nullptr;
  std::vector<ResultPart> parts;
  std::size_t elements() const;
};

struct WrongElements {
  std::uint64_t count = 0;        // wrong elements
  std::uint64_t checked = 0;      // elements compared
  std::uint64_t first_index = 0;  // the first wrong one's position in the result buffer
  std::string first_expected;
  std::string first_actual;
};

// "rank 2: 3 of 1048579 elements wrong; first at index 17: expected 4,
// actual 5" (empty when nothing is wrong).
std::string describe_wrong(const WrongElements& wrong, int rank);

class ValuePattern {
 public:
  // Inputs for the reducing collectives with `op` over `ranks`.
  static ValuePattern reduction(DataType type, ReduceOp op, int ranks);
  // Inputs for the copying collectives.
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

// Every element of every part of `result` against what it must hold.
WrongElements check_result(const ValuePattern& pattern, const ResultLayout& result);
// Every element of `result` against op over all ranks' inputs.
WrongElements check_reduction(const ValuePattern& pattern, Region result);

// --inject-error: changes one element so that it no longer matches.
void corrupt_element(DataType type, Region region, std::size_t index);

}  // namespace collective::cases
