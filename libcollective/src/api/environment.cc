#include "collective/environment.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "collective/errors.h"
#include "api/progress_engine.h"
#include "core/env_params.h"
#include "core/failure_record.h"
#include "core/log.h"
#include "core/mpi_check.h"
#include "core/mpi_lifetime.h"
#include "core/mpi_thread_level.h"

static_assert(collective::kExitAfterCommunicationFailure ==
                  collective::internal::kExitStatusAfterFailure,
              "core/failure_record.h repeats the exit status after a failure");

namespace collective {
namespace {

// How long MPI_Finalize may take once this process knows a rank died.
constexpr std::chrono::milliseconds kFinalizeBoundAfterPeerLoss{3000};

std::string seconds_text(std::chrono::milliseconds duration) {
  std::ostringstream text;
  text << std::chrono::duration<double>(duration).count();
  return text.str();
}

[[noreturn]] void end_after_peer_loss(const std::string& loss, const std::string& finalize_note) {
  COLLECTIVE_LOG(kWarn, "this job lost a rank and went on without it; "
                            << finalize_note << "ending this process with exit status "
                            << kExitAfterPeerLoss
                            << " (kExitAfterPeerLoss) so that it does not look like a clean run;"
                               " the first death seen here: "
                            << loss);
  std::fflush(nullptr);
  std::_Exit(kExitAfterPeerLoss);
}

}  // namespace

static_assert(kExitAfterPeerLoss == internal::kExitStatusAfterPeerLoss);
namespace {

// One Environment per process: MPI starts once and cannot start again
// after MPI_Finalize, so a second one could only lie about its state.
std::atomic<bool> g_environment_exists{false};

// This process's rank in MPI_COMM_WORLD as an earlier Environment saw it
// (MPI cannot be asked after MPI_Finalize); -1 when none did.
std::atomic<int> g_world_rank{-1};

int world_rank_if_running() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    g_world_rank.store(rank);
  }
  return g_world_rank.load();
}

bool initialize_mpi(int* argc, char*** argv) {
  constexpr const char* kOperation = "Environment";
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    throw InvalidArgumentError(kOperation, world_rank_if_running(),
                               "MPI is already finalized (an earlier Environment or the program "
                               "called MPI_Finalize), and MPI cannot be initialized again in a "
                               "process: make one Environment, in main(), for the whole run");
  }
  if (g_environment_exists.exchange(true)) {
    throw InvalidArgumentError(kOperation, world_rank_if_running(),
                               "an Environment already exists in this process: make one, in "
                               "main(), for the whole run (MPI starts once and cannot start "
                               "again after the first one finalizes it)");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    (void)world_rank_if_running();
    return false;
  }
  int provided = 0;
  // MULTIPLE: threads may use separate communicators side by side
  // (communicator.h), and the strategies run replicas as threads. Where MPI
  // gives less, the library serialises its own MPI calls
  // (core/mpi_thread_level.h) and says so once.
  const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) g_environment_exists.store(false);
  internal::check_mpi(rc, "MPI_Init_thread", kOperation, -1);
  if (provided < MPI_THREAD_MULTIPLE) {
    COLLECTIVE_LOG(kInfo, "MPI provides " << internal::mpi_thread_level_name(provided)
                                          << " rather than MPI_THREAD_MULTIPLE: the library "
                                             "serialises its MPI calls with one process lock"
                                          << (provided < MPI_THREAD_SERIALIZED
                                                  ? ", and only the main thread may call it"
                                                  : ""));
  }
  internal::set_log_rank(world_rank_if_running());
  return true;
}

}  // namespace

Environment::Environment(int& argc, char**& argv) : owns_mpi_(initialize_mpi(&argc, &argv)) {}

Environment::Environment() : owns_mpi_(initialize_mpi(nullptr, nullptr)) {}

Environment::~Environment() {
  // Calls in flight finish first (each within its timeout), while MPI runs.
  internal::finish_all_work_in_flight();
  g_environment_exists.store(false);
  if (!owns_mpi_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  const std::optional<std::string> failure = internal::first_communication_failure();
  if (!failure) {
    MPI_Finalize();
    return;
  }
  // After a timeout, a dead or stopped peer, an abort or an MPI error, a
  // peer may be unreachable, and MPI_Finalize then waits for it without
  // bound. It gets the call's timeout (COLLECTIVE_TIMEOUT): peers that are
  // fine (a program that recovered on another communicator) finalize as
  // usual; otherwise the process ends, without finalizing, and the
  // launcher ends the job.
  std::chrono::milliseconds bound{300'000};
  try {
    bound = internal::env_params().timeout;
  } catch (...) {
    // Destructors never throw; a malformed variable was reported earlier.
  }
  // After a rank's death Open MPI 4.1's MPI_Finalize sometimes waits for it
  // forever even under --enable-recovery (1 of 6 runs of
  // collective_shrink_kill_idle_np3): the survivors, done with their work,
  // give it a few seconds, and end with kExitAfterPeerLoss either way.
  const std::optional<std::string> loss = internal::first_peer_loss();
  if (loss) bound = std::min(bound, kFinalizeBoundAfterPeerLoss);
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mutex);
    if (finished.wait_for(lock, bound, [&] { return done; })) return;
    if (loss)
      end_after_peer_loss(*loss,
                          "MPI_Finalize did not return within " + seconds_text(bound) + " s; ");
    COLLECTIVE_LOG(kWarn, "MPI_Finalize did not return within "
                              << seconds_text(bound)
                              << " s after a communication failure (a peer may be unreachable): "
                                 "ending this process with exit status "
                              << kExitAfterCommunicationFailure
                              << "; the failure was: " << *failure);
    std::_Exit(kExitAfterCommunicationFailure);
  });
  MPI_Finalize();
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  finished.notify_one();
  watchdog.join();
  // A job that lost a rank is not a clean run, even where the survivors
  // went on to the end: the launcher must not report success.
  if (loss) end_after_peer_loss(*loss, "");
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
  const internal::MpiLock lock;
  MPI_Get_processor_name(name, &length);
  return std::string(name, static_cast<std::size_t>(length));
}

std::chrono::milliseconds Environment::default_timeout() { return internal::env_params().timeout; }

int Environment::log_level() { return static_cast<int>(internal::env_params().log_level); }

}  // namespace collective
