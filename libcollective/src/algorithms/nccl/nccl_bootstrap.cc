#include "algorithms/nccl/nccl_bootstrap.h"

#include <sched.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "algorithms/nccl/nccl_types.h"
#include "collective/errors.h"
#include "core/mpi_check.h"

namespace collective::internal {

void wait_for_mpi(MPI_Request& mpi_request, const Request& request, int rank, const char* what) {
  for (;;) {
    int done = 0;
    check_mpi(MPI_Test(&mpi_request, &done, MPI_STATUS_IGNORE), "MPI_Test", request.label(), rank);
    if (done) return;
    if (Clock::now() >= request.deadline) {
      throw TimeoutError(request.label(), rank,
                         "waited " + std::to_string(request.timeout.count()) + " ms for " + what +
                             "; every rank must make the same call on device buffers");
    }
    sched_yield();  // ranks may share cores
  }
}

void rendezvous(MPI_Comm comm, const Request& request, int rank, const char* what) {
  MPI_Request pending = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(comm, &pending), "MPI_Ibarrier", request.label(), rank);
  wait_for_mpi(pending, request, rank, what);
}

namespace {

struct UniqueIdMessage {
  int status = 0;  // 0: id holds rank 0's unique id; else error holds why not
  char error[480] = {0};
  ncclUniqueId id{};
};

}  // namespace

ncclUniqueId exchange_unique_id(MPI_Comm comm, const Request& request, int rank) {
  int comm_rank = 0;
  check_mpi(MPI_Comm_rank(comm, &comm_rank), "MPI_Comm_rank", request.label(), rank);
  // On the heap and released only on success: after a timeout MPI may
  // still write into the message when a late rank arrives.
  auto message = std::make_unique<UniqueIdMessage>();
  if (comm_rank == 0) {
    const ncclResult_t result = ncclGetUniqueId(&message->id);
    if (result != ncclSuccess) {
      message->status = 1;
      std::snprintf(message->error, sizeof(message->error), "ncclGetUniqueId failed: %s",
                    nccl_error_text(result, nullptr).c_str());
    }
  }
  MPI_Request pending = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibcast(message.get(), sizeof(UniqueIdMessage), MPI_BYTE, 0, comm, &pending),
            "MPI_Ibcast", request.label(), rank);
  try {
    wait_for_mpi(pending, request, rank, "the NCCL unique id from rank 0 (MPI_Ibcast)");
  } catch (...) {
    (void)message.release();  // deliberately leaked: see above
    throw;
  }
  if (message->status != 0) {
    throw CommunicationError(
        request.label(), rank,
        "rank 0 could not start the NCCL communicator: " + std::string(message->error));
  }
  return message->id;
}

}  // namespace collective::internal
