#include "core/mpi_lifetime.h"

#include <mpi.h>

#include <atomic>
#include <mutex>

#include "collective/errors.h"
#include "core/mpi_thread_level.h"

namespace collective::internal {
namespace {

std::atomic<bool> g_finalize_started{false};
std::atomic<void (*)()> g_before_finalize{nullptr};

int on_self_attribute_deleted(MPI_Comm, int, void*, void*) {
  if (void (*hook)() = g_before_finalize.load(std::memory_order_acquire)) hook();
  g_finalize_started.store(true, std::memory_order_release);
  return MPI_SUCCESS;
}

}  // namespace

void watch_mpi_finalize() {
  static std::once_flag once;
  std::call_once(once, [] {
    const MpiLock lock;
    int key = MPI_KEYVAL_INVALID;
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_self_attribute_deleted, &key, nullptr) ==
        MPI_SUCCESS) {
      MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
    }
  });
}

void before_mpi_finalize(void (*hook)()) {
  g_before_finalize.store(hook, std::memory_order_release);
}

bool mpi_finalize_started() { return g_finalize_started.load(std::memory_order_acquire); }

void require_mpi_running(const char* operation, int rank) {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized || mpi_finalize_started()) {
    throw InvalidArgumentError(operation, rank,
                               "MPI is already finalized (MPI_Finalize, or the destructor of "
                               "collective::Environment): nothing that needs MPI can run after it");
  }
  if (!initialized) {
    throw InvalidArgumentError(operation, rank,
                               "MPI is not initialized: create a collective::Environment first "
                               "(or call MPI_Init)");
  }
}

}  // namespace collective::internal
