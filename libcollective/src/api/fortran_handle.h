// The MPI communicator behind a Fortran handle that a caller hands to
// Communicator::from_mpi, checked before anything collective is asked of it.
#pragma once

#include <mpi.h>

namespace collective::internal {

// The intracommunicator that `handle` names. Throws InvalidArgumentError
// from `operation` naming the value when it is MPI_COMM_NULL's, names no
// live communicator of this process (as far as MPI can tell: see
// docs/errors.md), or names an intercommunicator. Makes no collective MPI
// call, so a refusal leaves every rank free to go on.
MPI_Comm intracommunicator_from_fortran_handle(int handle, const char* operation);

}  // namespace collective::internal
