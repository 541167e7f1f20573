// Whether the launcher keeps a job's survivors alive after a rank dies.
// Open MPI's mpirun does so only with --enable-recovery, which sets
// OMPI_MCA_orte_enable_recovery=1 in every rank's environment; without it
// mpirun ends the whole job at the first death, and a survivor may be
// killed while it handles the PeerFailedError. The library says so in the
// error, where it can tell (docs/errors.md, "When a rank dies").
#pragma once

#include <string>

#include "core/env_params.h"

namespace collective::internal {

// The note appended to a PeerFailedError's text: empty unless the process
// runs under Open MPI's mpirun (OMPI_COMM_WORLD_SIZE set) without recovery.
std::string launcher_recovery_note(const EnvLookup& lookup);
// The same for this process's environment, read once.
const std::string& launcher_recovery_note();

}  // namespace collective::internal
