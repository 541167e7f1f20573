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

// The exit status of a process that finished after a rank of its job died
// (collective::kExitAfterPeerLoss): the job was not a clean run.
inline constexpr int kExitStatusAfterPeerLoss = 15;

// Keeps `what` if it is the first; safe from any thread.
void record_communication_failure(const std::string& what);
std::optional<std::string> first_communication_failure();
// The first death of a peer this process learned of ("rank 1 (pid 4711 on
// node7) died"), for the summary at shutdown; safe from any thread.
void record_peer_loss(const std::string& what);
std::optional<std::string> first_peer_loss();

}  // namespace collective::internal
