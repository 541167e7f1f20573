#include "collective/environment.h"

#include <mpi.h>

#include <optional>

#include "collective/errors.h"
#include "core/env_params.h"
#include "core/failure_record.h"
#include "core/log.h"
#include "core/mpi_check.h"
#include "core/mpi_lifetime.h"

namespace collective {
namespace {

bool initialize_mpi(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return false;
  int provided = 0;
  // SERIALIZED: the strategies run replicas as threads, and any of them may
  // be the one that calls into MPI (one at a time).
  internal::check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided),
                      "MPI_Init_thread", "Environment", -1);
  if (provided < MPI_THREAD_SERIALIZED) {
    COLLECTIVE_LOG(kWarn, "MPI provides thread level " << provided
                                                       << " < MPI_THREAD_SERIALIZED");
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  internal::set_log_rank(rank);
  return true;
}

}  // namespace

Environment::Environment(int& argc, char**& argv) : owns_mpi_(initialize_mpi(&argc, &argv)) {}

Environment::Environment() : owns_mpi_(initialize_mpi(nullptr, nullptr)) {}

Environment::~Environment() {
  if (!owns_mpi_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // After a timeout, a dead or stopped peer, an abort or an MPI error, the
  // peers may be unreachable, and MPI_Finalize waits for them without
  // bound: end the whole job instead, as MPI does with a fatal error.
  if (const std::optional<std::string> failure = internal::first_communication_failure()) {
    COLLECTIVE_LOG(kWarn, "not calling MPI_Finalize after a communication failure (peers may be "
                           "unreachable, and it would wait for them): ending the job with "
                           "MPI_Abort; the failure was: "
                               << *failure);
    MPI_Abort(MPI_COMM_WORLD, kExitAfterCommunicationFailure);
  }
  MPI_Finalize();
}

bool Environment::initialized() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

std::string Environment::host_name() {
  // MPI_Get_processor_name outside MPI's lifetime aborts the process.
  internal::require_mpi_running("Environment::host_name", -1);
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  return std::string(name, static_cast<std::size_t>(length));
}

std::chrono::milliseconds Environment::default_timeout() { return internal::env_params().timeout; }

int Environment::log_level() { return static_cast<int>(internal::env_params().log_level); }

}  // namespace collective
