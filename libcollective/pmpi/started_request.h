// The MPI_Request of a served MPI_I* call: an MPI generalized request
// (MPI_Grequest_start) that the call's Work completes from the library's
// progress thread (MPI_Grequest_complete) the moment the call finished, so
// MPI_Wait, MPI_Test, MPI_Waitall, MPI_Waitany, MPI_Testall and
// MPI_Testany complete it mixed with the program's own requests. The rule
// (docs/embedding.md, "Nonblocking collectives"): a failed call's error
// class is the request's status.MPI_ERROR and what the completing call
// returns, its message one stderr line; MPI_Request_free lets the call run
// to its end; MPI_Cancel is refused with MPI_ERR_REQUEST, as MPI's own
// nonblocking collectives refuse it.
#pragma once

#include <mpi.h>

#include <memory>

#include "collective/work.h"
#include "intercept_table.h"

namespace collective::pmpi {

// Makes *request the generalized request of `work` (started by this rank,
// `rank` in the call's communicator); `keep_alive` is released once the
// call finished. Throws CommunicationError when MPI refuses the request.
void start_request(Intercepted call, int rank, Work work, std::shared_ptr<void> keep_alive,
                   MPI_Request* request);

}  // namespace collective::pmpi
