// Which libcollective Communicator serves which MPI communicator. The
// Communicator (a duplicate of the caller's communicator's group, made
// without copying its attributes, so the program's attribute copy and
// delete callbacks never run for it) hangs on the
// caller's communicator as an MPI attribute: MPI_Comm_free of the caller's
// communicator runs the attribute's delete callback, which frees ours;
// MPI_Comm_dup does not copy it (the dup gets its own on first use).
// release_all() frees every mapping, for MPI_Finalize.
#pragma once

#include <mpi.h>

#include "collective/communicator.h"
#include "comm_cache.h"

namespace collective::pmpi {

// The Communicator for `comm`, made on first use (collective over comm:
// every rank reaches it at the same call, since every rank serves the same
// calls), and remembered in this thread's cache (comm_cache.h). Throws what
// Communicator::from_mpi throws.
ServedComm mapped_communicator(MPI_Comm comm);

// Deletes every mapping (freeing our duplicates) and the attribute key.
void release_all();

}  // namespace collective::pmpi
