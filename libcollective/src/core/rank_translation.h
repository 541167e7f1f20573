// Where each rank of one MPI communicator stands in another: the world
// ranks a flight recorder names its communicator by, and the ranks of the
// communicator the user called that a step's communicator (hierarchical's
// ring across nodes) shows in its errors.
#pragma once

#include <mpi.h>

#include <vector>

namespace collective::internal {

// For every rank r of `from`, its rank in `to`, or MPI_UNDEFINED where it is
// not a member (or where MPI could not tell: its group calls failed).
std::vector<int> ranks_in(MPI_Comm from, MPI_Comm to);

}  // namespace collective::internal
