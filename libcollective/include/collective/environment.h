// Process-wide start-up and shut-down of the library's runtime (MPI).
#pragma once

#include "collective/export.h"

#include <chrono>
#include <string>

namespace collective {

// The exit status of a process that Environment ends after a
// communication failure (see below).
inline constexpr int kExitAfterCommunicationFailure = 14;
// The exit status of a process that finished, MPI_Finalize included, after
// a rank of its job died (PeerFailedError, Communicator::shrink): under
// `mpirun --enable-recovery` the job would otherwise end with status 0, as
// a clean run. Environment's destructor logs a summary line naming the
// first dead rank and ends the process with it (docs/errors.md).
inline constexpr int kExitAfterPeerLoss = 15;

// Initializes MPI (asking for MPI_THREAD_MULTIPLE) unless the program
// already did, and finalizes it on destruction only if it initialized it.
// After a communication failure (a TimeoutError, a dead or stopped peer, an
// abort, an MPI error) MPI_Finalize may wait forever for an unreachable
// peer: the destructor then gives it the timeout (COLLECTIVE_TIMEOUT) and,
// if it has not returned by then, logs the failure and ends the process
// with kExitAfterCommunicationFailure, without finalizing (the launcher
// then ends the job).
// One per process: a second Environment while one exists, or one made after
// MPI_Finalize (MPI cannot be initialized again), raises
// InvalidArgumentError naming Environment.
// Create one in main() before any Communicator:
//
//   int main(int argc, char** argv) {
//     collective::Environment env(argc, argv);
//     auto world = collective::Communicator::world();
//     ...
//   }
class COLLECTIVE_API Environment {
 public:
  Environment(int& argc, char**& argv);
  Environment();
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  // True when MPI is initialized and not yet finalized.
  static bool initialized();
  // The processor name MPI reports for this process. Raises
  // InvalidArgumentError when MPI is not initialized or already finalized.
  static std::string host_name();

  // What the library's own layers (strategies, bench) share with it, from
  // the library's one parser of COLLECTIVE_* variables (docs/parameters.md).
  // No MPI needed. A malformed COLLECTIVE_* variable (any of them) raises
  // InvalidArgumentError naming it.
  // COLLECTIVE_TIMEOUT: the default timeout of a call (300 s when unset).
  static std::chrono::milliseconds default_timeout();
  // COLLECTIVE_DEBUG: 0 NONE, 1 WARN (default), 2 INFO, 3 DEBUG, 4 TRACE.
  static int log_level();

 private:
  bool owns_mpi_ = false;
};

}  // namespace collective
