// Which threads may call MPI, and how the library's own MPI calls stay
// legal under the thread level MPI was initialised at (MPI_Query_thread):
//   MULTIPLE   any thread, at the same time: no lock at all.
//   SERIALIZED one thread at a time: every MPI call of the library holds
//              one process lock, for that call only. No blocking MPI call
//              that waits for a peer runs under it: waits are non-blocking
//              requests tested under the lock, yielding between tests, so
//              a thread waiting for comm1 never holds up another rank's
//              thread that needs this rank's comm2 (the lock held across a
//              blocking MPI_Allreduce would deadlock two ranks whose
//              threads entered comm1 and comm2 in opposite orders). The
//              blocking MPI_Comm_split(_type) of communicator creation is
//              guarded by CreationTurn (communicator_creation.h).
//   FUNNELED, SINGLE  only the main thread calls MPI: a call from another
//              thread is refused (require_mpi_thread).
// Environment asks for MULTIPLE; a program that initialised MPI itself
// gets the rules of its own level. The lock is not taken around MPI calls
// made by the program itself, which keeps its own side of the level's
// promise (docs/errors.md, "Threads").
#pragma once

#include <mpi.h>

#include <atomic>
#include <mutex>

namespace collective::internal {

// MPI_Query_thread, asked once MPI is initialised (-1 before).
int mpi_thread_level();
const char* mpi_thread_level_name(int level);

// Whether the library must serialise its MPI calls (level below MULTIPLE):
// one relaxed load once known.
inline bool mpi_calls_serialized() {
  extern std::atomic<int> g_mpi_thread_level;
  const int level = g_mpi_thread_level.load(std::memory_order_relaxed);
  return (level >= 0 ? level : mpi_thread_level()) < MPI_THREAD_MULTIPLE;
}

// Whether only the main thread may call MPI (FUNNELED, SINGLE).
inline bool mpi_main_thread_only() {
  extern std::atomic<int> g_mpi_thread_level;
  const int level = g_mpi_thread_level.load(std::memory_order_relaxed);
  return (level >= 0 ? level : mpi_thread_level()) < MPI_THREAD_SERIALIZED;
}

std::recursive_mutex& mpi_call_mutex();

// Held around one MPI call (or a few that finish without waiting for a
// peer); a no-op at MPI_THREAD_MULTIPLE.
class MpiLock {
 public:
  MpiLock() : locked_(mpi_calls_serialized()) {
    if (locked_) mpi_call_mutex().lock();
  }
  ~MpiLock() {
    if (locked_) mpi_call_mutex().unlock();
  }
  MpiLock(const MpiLock&) = delete;
  MpiLock& operator=(const MpiLock&) = delete;

 private:
  bool locked_;
};

// Below MPI_THREAD_SERIALIZED (FUNNELED, SINGLE) only the main thread may
// call MPI: throws InvalidArgumentError naming `operation`, `rank` and the
// level when the caller is another thread. Nothing is touched before.
void require_mpi_thread(const char* operation, int rank);

// MPI_Is_thread_main: whether the calling thread initialised MPI.
bool on_mpi_main_thread();

}  // namespace collective::internal
