// --baseline mpi: the MPI call that matches each collective case, on the
// case's buffers and placement (cases/collective_case.h).
#pragma once

#include "mpi_baseline.h"
#include "shared_cases.h"

namespace collective::bench {

// Runs the MPI counterpart of `c` with the arguments the case placed.
void run_mpi(const CollectiveCase& c, const MpiBaseline& mpi, const CallArgs& args);

// Where the MPI counterpart leaves this rank's result: the case's layout,
// except where MPI's in-place form differs (MPI_Reduce_scatter_block in
// place leaves block r at the start of the buffer).
ResultLayout mpi_result(const CollectiveCase& c, const CallArgs& args);

// nullptr when MPI's int counts can express the call; else the reason.
// Single-buffer calls are split into pieces of INT_MAX elements instead.
const char* mpi_limit(const CollectiveCase& c, const Geometry& geometry, const cases::Shape& shape);

}  // namespace collective::bench
