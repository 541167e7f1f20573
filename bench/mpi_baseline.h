// The baseline: the MPI library's own collectives, called directly on a
// duplicate of MPI_COMM_WORLD, on the benchmark's buffers. Types and ops are
// MPI's built-in ones where MPI has them. float16 and bfloat16, which MPI
// lacks, travel as MPI_UINT16_T with user-defined ops written here (convert
// to float, combine, round back), as an MPI program would have to; MEAN is
// MPI_SUM followed by a division pass.
//
// This is deliberately not the library's own type and op map
// (transport/mpi/mpi_datatypes): the baseline is the user's path. Where the
// two differ (Open MPI's AVX component saturates 8-bit integer SUM where the
// library wraps around, open-mpi/ompi#8045), the bench's value patterns stay
// within range, so checked results agree.
#pragma once

#include <mpi.h>

#include <array>
#include <climits>
#include <cstddef>
#include <functional>
#include <vector>

#include "collective/types.h"

namespace collective::bench {

class MpiBaseline {
 public:
  MpiBaseline();  // duplicates MPI_COMM_WORLD; MPI must be initialized
  ~MpiBaseline();
  MpiBaseline(const MpiBaseline&) = delete;
  MpiBaseline& operator=(const MpiBaseline&) = delete;

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  static MPI_Datatype datatype(DataType type);
  // The op MPI applies; for MEAN, MPI_SUM (finish_mean divides).
  MPI_Op op(DataType type, ReduceOp op) const;

  // After an MPI_SUM that stands for MEAN: divide `count` elements by the
  // number of ranks (integers truncate toward zero, as libcollective does).
  void finish_mean(void* buffer, std::size_t count, DataType type, ReduceOp op) const;

  // MPI counts are int: calls f(first_element, count) for pieces of at
  // most INT_MAX elements (one call for counts that fit, also for 0).
  static void for_each_piece(std::size_t count, const std::function<void(std::size_t, int)>& f);

  // MPI's counts and displacements are int; mpi_limit refused the call
  // before anything ran where they do not fit.
  static std::vector<int> int_counts(const std::vector<std::size_t>& values) {
    return std::vector<int>(values.begin(), values.end());
  }

  // Throws std::runtime_error naming the MPI call when rc is not success.
  void check(int rc, const char* call) const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  // User-defined ops, indexed by ReduceOp (MEAN uses SUM's).
  std::array<MPI_Op, kNumReduceOps> float16_ops_{};
  std::array<MPI_Op, kNumReduceOps> bfloat16_ops_{};
};

}  // namespace collective::bench
