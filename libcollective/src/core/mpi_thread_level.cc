#include "core/mpi_thread_level.h"

#include <string>

#include "collective/errors.h"

namespace collective::internal {

std::atomic<int> g_mpi_thread_level{-1};

int mpi_thread_level() {
  int level = g_mpi_thread_level.load(std::memory_order_acquire);
  if (level >= 0) return level;
  // MPI_Initialized and MPI_Query_thread may be called from any thread.
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return -1;
  MPI_Query_thread(&level);
  g_mpi_thread_level.store(level, std::memory_order_release);
  return level;
}

const char* mpi_thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "an unknown MPI thread level";
  }
}

std::recursive_mutex& mpi_call_mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

bool on_mpi_main_thread() {
  int main_thread = 0;
  MPI_Is_thread_main(&main_thread);
  return main_thread != 0;
}

void require_mpi_thread(const char* operation, int rank) {
  const int level = mpi_thread_level();
  if (level < 0 || level >= MPI_THREAD_SERIALIZED) return;
  int main_thread = 0;
  MPI_Is_thread_main(&main_thread);
  if (main_thread) return;
  throw InvalidArgumentError(
      operation, rank,
      std::string("called from a thread other than the one that initialised MPI, but MPI was "
                  "initialised at ") +
          mpi_thread_level_name(level) +
          ", where only that thread may call MPI: initialise MPI at MPI_THREAD_SERIALIZED or "
          "MPI_THREAD_MULTIPLE (collective::Environment asks for MULTIPLE), or make every call "
          "from that thread");
}

}  // namespace collective::internal
