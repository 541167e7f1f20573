#include "core/mpi_check.h"

#include "collective/errors.h"
#include "core/failure_record.h"
#include "core/mpi_thread_level.h"

namespace collective::internal {

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  const MpiLock lock;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) {
    return "MPI error code " + std::to_string(rc);
  }
  return std::string(text, static_cast<std::size_t>(length));
}

void check_mpi(int rc, const char* call, const std::string& operation, int rank) {
  if (rc == MPI_SUCCESS) return;
  const CommunicationError error(operation, rank,
                                 std::string(call) + " failed: " + mpi_error_text(rc));
  record_communication_failure(error.what());
  throw error;
}

}  // namespace collective::internal
