// --nonblocking: MPI's nonblocking counterpart of each collective
// (MPI_Iallreduce, MPI_Ireduce_scatter_block, ..., MPI_Ibarrier), on the
// case's buffers and placement, as mpi_counterparts.h calls the blocking
// ones on the same communicator.
#pragma once

#include <mpi.h>

#include <string_view>
#include <vector>

#include "mpi_baseline.h"
#include "shared_cases.h"

namespace collective::bench {

// The MPI call that starts `kind` (MPI_Iallreduce, ...).
std::string_view mpi_nonblocking_name(CollectiveKind kind);

// One MPI nonblocking collective, started and waited for as often as the
// caller likes. It owns what MPI reads until the call completes: the
// requests and the v-forms' int counts and displacements (MPI forbids
// changing them while the call is in flight).
class MpiNonblockingCall {
 public:
  // `args` placed by the case (ignored for barrier). Sizes MPI's int
  // counts cannot express were refused before (mpi_limit); single-buffer
  // calls go in pieces of at most INT_MAX elements, all in flight together.
  MpiNonblockingCall(CollectiveKind kind, const MpiBaseline& mpi, CallArgs args);

  void start();
  // Waits for every request; MEAN then divides, as the blocking
  // counterparts do (MPI has no MEAN).
  void wait();

 private:
  // The request of the next call started.
  MPI_Request* next_request();

  CollectiveKind kind_;
  const MpiBaseline& mpi_;
  CallArgs args_;
  std::vector<int> send_counts_;
  std::vector<int> send_displacements_;
  std::vector<int> recv_counts_;
  std::vector<int> recv_displacements_;
  std::vector<MPI_Request> requests_;
};

}  // namespace collective::bench
