// Whether MPI can still be called, cheaply enough for every collective: a
// call after MPI_Finalize must raise a clear error, not abort inside MPI or
// run on shared memory as if nothing had happened.
#pragma once

namespace collective::internal {

// Arranges (once per process, MPI initialized) to learn when MPI_Finalize
// begins: MPI deletes MPI_COMM_SELF's attributes first thing in
// MPI_Finalize, and the attribute set here flips a flag when deleted.
// Called whenever a communicator is made.
void watch_mpi_finalize();

// `hook` runs first thing in MPI_Finalize, before mpi_finalize_started()
// turns true (the library's calls in flight finish there). One hook per
// process; setting the same again is a no-op.
void before_mpi_finalize(void (*hook)());

// True once MPI_Finalize has begun (after watch_mpi_finalize()); one
// atomic load.
bool mpi_finalize_started();

// Throws InvalidArgumentError from `operation` on `rank` when MPI is not
// initialized or is finalized (asks MPI: for entry points that are not
// per-call hot paths).
void require_mpi_running(const char* operation, int rank);

}  // namespace collective::internal
