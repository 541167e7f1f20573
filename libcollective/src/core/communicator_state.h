// What a Communicator handle points to: the private MPI communicator and
// everything the algorithms keep between calls.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "collective/algorithm.h"
#include "core/scratch_buffer.h"

namespace collective::internal {

// State an algorithm builds lazily for one communicator (NCCL
// communicators, sub-communicators, pinned buffers). Destroyed by
// CommunicatorState::release(), before the MPI communicator is freed; the
// destructor must not throw.
class AlgorithmResources {
 public:
  virtual ~AlgorithmResources() = default;
};

struct CommunicatorState {
  // Takes ownership of `owned_comm` (a duplicate made for the library) and
  // sets MPI_ERRORS_RETURN on it.
  explicit CommunicatorState(MPI_Comm owned_comm);
  ~CommunicatorState();
  CommunicatorState(const CommunicatorState&) = delete;
  CommunicatorState& operator=(const CommunicatorState&) = delete;

  // Frees the MPI communicator (idempotent); later calls are rejected.
  void release();

  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  std::string host;

  std::uint64_t next_sequence = 0;
  Algorithm last_algorithm = Algorithm::kAuto;
  bool freed = false;
  // Set after a communication failure or timeout: the first cause, which
  // every later call reports.
  std::optional<std::string> poisoned;

  // Reused by the algorithms: incoming segments, partial sums.
  ScratchBuffer scratch_in;
  ScratchBuffer scratch_work;

  // The NCCL algorithm's communicators and streams (algorithms/nccl_resources.h).
  std::unique_ptr<AlgorithmResources> nccl;
};

}  // namespace collective::internal
