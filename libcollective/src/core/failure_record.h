// The first communication failure of the process (a timeout, a dead or
// stopped peer, an abort, an MPI error), kept so that shutting down can
// tell whether the peers may be unreachable: MPI_Finalize then waits for
// them forever, so Environment ends the job instead (docs/errors.md).
#pragma once

#include <optional>
#include <string>

namespace collective::internal {

// The exit status of a process the library ends after a communication
// failure: collective::kExitAfterCommunicationFailure (environment.h, which
// api/environment.cc checks is the same), here for core/ to use.
inline constexpr int kExitStatusAfterFailure = 14;

// Keeps `what` if it is the first; safe from any thread.
void record_communication_failure(const std::string& what);
std::optional<std::string> first_communication_failure();

}  // namespace collective::internal
