// The drop-in's per-thread memory of the communicators it serves, so that a
// call on a communicator served before finds its Communicator with no MPI
// call at all (no attribute lookup, no MPI_Initialized, no
// MPI_Comm_test_inter: together about 400 instructions of Open MPI's per
// call, more than a small all-reduce costs).
//
// An entry is trusted only while no mapped communicator has been freed since
// it was filled: freeing one (MPI_Comm_free or MPI_Comm_disconnect of the
// caller's communicator, MPI_Finalize) runs comm_map's delete callback,
// which moves a process-wide epoch and so empties every thread's cache at
// once. MPI reuses the handles of freed communicators; a new communicator on
// an old handle therefore never finds its predecessor's Communicator.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>

#include "collective/communicator.h"
#include "handle_bits.h"

namespace collective::pmpi {

// A served communicator: ours, and the caller's rank and size in it (the
// same as in the caller's communicator, whose group ours duplicates).
struct ServedComm {
  Communicator* communicator = nullptr;
  int rank = -1;
  int size = 0;
};

namespace comm_cache {

// Moved by every free of a mapped communicator; entries filled under an
// older value are stale. Starts at 1 so that an empty entry never matches.
extern std::atomic<std::uint64_t> epoch;

struct Entry {
  MPI_Comm comm{};  // zero-initialized: nothing to relocate in the TLS image
  std::uint64_t epoch = 0;
  ServedComm served;
};

// Direct-mapped: a program's hot loop uses one or a few communicators.
// Constant-initialized (no guard on access) and initial-exec (no
// __tls_get_addr call): the drop-in is loaded at start-up, LD_PRELOADed or
// linked, where static TLS has room for these 256 bytes.
inline constexpr int kEntryBits = 3;
extern constinit thread_local Entry entries[1 << kEntryBits]
    __attribute__((tls_model("initial-exec")));

inline Entry& slot_of(MPI_Comm comm) { return entries[hashed_slot<kEntryBits>(comm)]; }

}  // namespace comm_cache

// The entry this thread keeps for `comm`, or nullptr (never served on this
// thread, evicted, or a mapped communicator was freed since).
inline const ServedComm* cached_comm(MPI_Comm comm) {
  const comm_cache::Entry& entry = comm_cache::slot_of(comm);
  if (entry.comm != comm || entry.epoch != comm_cache::epoch.load(std::memory_order_acquire)) {
    return nullptr;
  }
  return &entry.served;
}

// Remembers `served` for `comm` on this thread.
void remember_comm(MPI_Comm comm, const ServedComm& served);

// Empties every thread's cache (a mapped communicator is being freed).
void forget_all_comms();

}  // namespace collective::pmpi
