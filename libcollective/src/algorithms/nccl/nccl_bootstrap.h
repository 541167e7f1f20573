// The MPI side of setting up NCCL: waiting for a non-blocking MPI
// collective within the call's deadline, and handing rank 0's NCCL unique
// id to every rank. Nothing here waits without a bound.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include "core/request.h"

namespace collective::internal {

// Polls `mpi_request` (MPI_Test, yielding between polls) until it
// completes. Throws CommunicationError on an MPI failure and TimeoutError
// naming `what` once request.deadline has passed; the buffers of a request
// that timed out must then stay allocated (MPI may still write them).
void wait_for_mpi(MPI_Request& mpi_request, const Request& request, int rank, const char* what);

// Collective over `comm`: returns once every rank has arrived (MPI_Ibarrier,
// bounded like wait_for_mpi), so that blocking MPI calls after it, such as
// MPI_Comm_split, cannot wait for a rank that is not coming.
void rendezvous(MPI_Comm comm, const Request& request, int rank, const char* what);

// Collective over `comm`: rank 0 of comm creates an NCCL unique id
// (ncclGetUniqueId) and every rank returns it. When rank 0 fails, every
// rank raises CommunicationError with rank 0's reason instead of waiting.
ncclUniqueId exchange_unique_id(MPI_Comm comm, const Request& request, int rank);

}  // namespace collective::internal
