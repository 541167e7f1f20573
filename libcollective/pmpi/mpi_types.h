// The drop-in's rule for which datatypes and ops libcollective serves
// (docs/embedding.md, "What is served"). A nullopt comes with the reason
// the call goes to PMPI_ instead.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>
#include <string>

#include "collective/types.h"

namespace collective::pmpi {

struct ReductionType {
  DataType type;
  ReduceOp op;
};

// A predefined datatype of 1, 4 or 8-byte integers or 4 or 8-byte floats
// with MPI_SUM, MPI_PROD, MPI_MIN or MPI_MAX; unsigned 32/64-bit integers
// with MPI_SUM only (the same bits as signed two's-complement sums).
// Otherwise nullopt and `reason` says why.
std::optional<ReductionType> reduction_type(MPI_Datatype datatype, MPI_Op op, std::string& reason);

// The bytes of `count` elements when they lie contiguously without gaps
// (any datatype, predefined or derived, whose size equals its extent and
// true extent, lower bounds 0), else nullopt and `reason`.
std::optional<std::size_t> contiguous_bytes(MPI_Datatype datatype, int count, std::string& reason);

}  // namespace collective::pmpi
