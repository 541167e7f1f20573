#include "comm_map.h"

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "collective/diagnostics.h"
#include "collective/errors.h"
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
  forget_all_comms();  // no thread may find it in its cache from now on
  delete static_cast<Mapping*>(value);
  std::lock_guard<std::mutex> lock(mapping_mutex);
  mapped.erase(comm);
  return MPI_SUCCESS;
}

// Our Communicator over `comm`'s group, made without running the program's
// attribute callbacks: Communicator::from_mpi duplicates (MPI_Comm_idup,
// which copies every attribute of `comm` through its keyval's copy
// callback, and the duplicate's free later runs the delete callback), so
// it is handed a communicator made by MPI_Comm_split instead, which
// carries no attributes, and that one is freed once duplicated.
Communicator duplicate_without_attributes(MPI_Comm comm) {
  int rank = -1;
  PMPI_Comm_rank(comm, &rank);
  MPI_Comm bare = MPI_COMM_NULL;
  const int rc = PMPI_Comm_split(comm, 0, rank, &bare);
  if (rc != MPI_SUCCESS || bare == MPI_COMM_NULL) {
    throw CommunicationError("libcollective_mpi", rank,
                             "MPI_Comm_split of the caller's communicator failed (MPI error " +
                                 std::to_string(rc) + ")");
  }
  struct FreeOnReturn {
    MPI_Comm& comm;
    ~FreeOnReturn() { PMPI_Comm_free(&comm); }
  } free_on_return{bare};
  return Communicator::from_mpi(PMPI_Comm_c2f(bare));
}

}  // namespace

ServedComm mapped_communicator(MPI_Comm comm) {
  {
    std::lock_guard<std::mutex> lock(mapping_mutex);
    if (keyval == MPI_KEYVAL_INVALID) {
      PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_mapping, &keyval, nullptr);
      // An unmodified program keeps its SIGUSR1 and gets no thread of ours
      // unless COLLECTIVE_FLIGHT_RECORDER_SIGNAL=1 asks (docs/embedding.md).
      set_flight_recorder_signal_default(false);
    }
  }
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, keyval, &value, &found);
  Mapping* mapping = static_cast<Mapping*>(value);
  if (!found) {
    auto made = std::make_unique<Mapping>(Mapping{duplicate_without_attributes(comm)});
    PMPI_Comm_set_attr(comm, keyval, made.get());
    {
      std::lock_guard<std::mutex> lock(mapping_mutex);
      mapped.insert(comm);
    }
    mapping = made.release();
  }
  const ServedComm served{&mapping->communicator, mapping->communicator.rank(),
                          mapping->communicator.size()};
  remember_comm(comm, served);
  return served;
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
