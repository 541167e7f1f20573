#include "comm_cache.h"

namespace collective::pmpi {
namespace comm_cache {

std::atomic<std::uint64_t> epoch{1};
constinit thread_local Entry entries[1 << kEntryBits] __attribute__((tls_model("initial-exec")));

}  // namespace comm_cache

void remember_comm(MPI_Comm comm, const ServedComm& served) {
  comm_cache::slot_of(comm) =
      comm_cache::Entry{comm, comm_cache::epoch.load(std::memory_order_acquire), served};
}

void forget_all_comms() { comm_cache::epoch.fetch_add(1, std::memory_order_acq_rel); }

}  // namespace collective::pmpi
