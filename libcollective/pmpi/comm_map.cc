#include "comm_map.h"

#include <mutex>
#include <set>
#include <vector>

#include "reentry_guard.h"

namespace collective::pmpi {
namespace {

struct Mapping {
  Communicator communicator;
};

// Guards the key and the set below (threads of SERIALIZED and MULTIPLE
// programs map their communicators from several threads).
std::mutex mapping_mutex;
int keyval = MPI_KEYVAL_INVALID;
std::set<MPI_Comm> mapped;  // the caller's communicators holding a Mapping

int delete_mapping(MPI_Comm comm, int, void* value, void*) {
  ReentryGuard guard;  // freeing our duplicate calls MPI
  delete static_cast<Mapping*>(value);
  std::lock_guard<std::mutex> lock(mapping_mutex);
  mapped.erase(comm);
  return MPI_SUCCESS;
}

}  // namespace

Communicator& mapped_communicator(MPI_Comm comm) {
  {
    std::lock_guard<std::mutex> lock(mapping_mutex);
    if (keyval == MPI_KEYVAL_INVALID) {
      PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_mapping, &keyval, nullptr);
    }
  }
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, keyval, &value, &found);
  if (found) return static_cast<Mapping*>(value)->communicator;

  auto mapping = std::make_unique<Mapping>(Mapping{Communicator::from_mpi(PMPI_Comm_c2f(comm))});
  PMPI_Comm_set_attr(comm, keyval, mapping.get());
  {
    std::lock_guard<std::mutex> lock(mapping_mutex);
    mapped.insert(comm);
  }
  return mapping.release()->communicator;
}

void release_all() {
  std::vector<MPI_Comm> comms;
  {
    std::lock_guard<std::mutex> lock(mapping_mutex);
    comms.assign(mapped.begin(), mapped.end());
  }
  for (MPI_Comm comm : comms) PMPI_Comm_delete_attr(comm, keyval);  // runs delete_mapping
  std::lock_guard<std::mutex> lock(mapping_mutex);
  if (keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&keyval);
  mapped.clear();
}

}  // namespace collective::pmpi
