#include "core/communicator_creation.h"

#include <condition_variable>
#include <set>
#include <string>

#include "collective/errors.h"
#include "core/env_params.h"
#include "core/mpi_check.h"
#include "core/mpi_thread_level.h"
#include "core/wait_guard.h"

namespace collective::internal {
namespace {

struct ParentTurns {
  std::mutex mutex;
  std::condition_variable released;
  std::set<MPI_Comm> busy;
};

ParentTurns& parent_turns() {
  static ParentTurns turns;
  return turns;
}

std::mutex& creation_mutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

ParentTurn::ParentTurn(MPI_Comm parent) : parent_(parent) {
  ParentTurns& turns = parent_turns();
  std::unique_lock<std::mutex> lock(turns.mutex);
  turns.released.wait(lock, [&] { return turns.busy.count(parent_) == 0; });
  turns.busy.insert(parent_);
}

ParentTurn::~ParentTurn() {
  ParentTurns& turns = parent_turns();
  {
    std::lock_guard<std::mutex> lock(turns.mutex);
    turns.busy.erase(parent_);
  }
  turns.released.notify_all();
}

CreationTurn::CreationTurn() : needed_(mpi_calls_serialized()) {
  if (needed_) held_ = creation_mutex().try_lock();
}

CreationTurn::~CreationTurn() {
  if (needed_ && held_) creation_mutex().unlock();
}

void agree_on_creation_turn(const CreationTurn& turn, MPI_Comm comm, const char* operation,
                            int rank) {
  if (!turn.needed()) return;
  int size = 1;
  {
    const MpiLock lock;
    MPI_Comm_size(comm, &size);
  }
  // The first rank that did not get its turn (size: every rank did).
  int first_without = turn.held() ? size : rank;
  MPI_Request request = MPI_REQUEST_NULL;
  {
    const MpiLock lock;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, &first_without, 1, MPI_INT, MPI_MIN, comm, &request),
              "MPI_Iallreduce", operation, rank);
  }
  WaitGuard guard(operation, rank, env_params().timeout, nullptr,
                  "agreement that no rank is making another communicator");
  int done = 0;
  while (true) {
    {
      const MpiLock lock;
      check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test", operation, rank);
    }
    if (done) break;
    guard.idle([] {
      return WaitTarget{{}, "every rank of the parent communicator to call the same operation"};
    });
  }
  if (first_without == size) return;
  const std::string who =
      first_without == rank ? std::string("this rank") : "rank " + std::to_string(first_without);
  throw InvalidArgumentError(
      operation, rank,
      who +
          " was making another communicator in another thread at the same time; MPI was "
          "initialised at " +
          std::string(mpi_thread_level_name(mpi_thread_level())) +
          ", below which a process makes one communicator at a time (MPI_Comm_split blocks, and "
          "two blocking splits in two threads can deadlock two ranks): nothing was made and "
          "this communicator stays usable; make communicators in one thread, or initialise "
          "MPI at MPI_THREAD_MULTIPLE (collective::Environment does)");
}

}  // namespace collective::internal
