// Translation of MPI return codes into the library's exceptions, at the
// boundary where MPI is called.
#pragma once

#include <mpi.h>

#include <string>

namespace collective::internal {

// Throws CommunicationError "<operation> (rank r): <call> failed: <MPI text>"
// when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* call, const std::string& operation, int rank);

std::string mpi_error_text(int rc);

}  // namespace collective::internal

#define COLLECTIVE_MPI_CHECK(call, operation, rank) \
  ::collective::internal::check_mpi((call), #call, (operation), (rank))
