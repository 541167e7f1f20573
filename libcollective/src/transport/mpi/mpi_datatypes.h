// The MPI datatype and reduction op for each of the library's types and
// ops. float16 and bfloat16 (which MPI lacks) and floating MIN/MAX (for the
// library's NaN rule) use user-defined ops built on the library's kernels.
#pragma once

#include <mpi.h>

#include "collective/types.h"

namespace collective::internal {

MPI_Datatype mpi_datatype(DataType type);

// The op for `op` on `type`; MEAN maps to SUM (the caller divides).
MPI_Op mpi_op(DataType type, ReduceOp op);

}  // namespace collective::internal
