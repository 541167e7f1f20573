// The two routes of a shared-memory block exchange's blocks of 64 KiB and
// more (transport/shm/two_way_tuner.h says which is faster when, and
// chooses; COLLECTIVE_SHM_BLOCK_ROUTE forces one).
#pragma once

#include <cstddef>
#include <cstdint>

namespace collective::internal {

// Blocks of at least this size have the two routes (below); the kernel's
// copy is cross-memory attach, where the ranks may use it: a process_vm_readv costs a system call
// and the pinning of the peer's pages, a few microseconds, which larger blocks amortize (Open MPI's
// vader switches to it at 32 KiB); it saves the hand-offs of the rounds, one per slot's piece, and
// the copy into the slot.
inline constexpr std::size_t kCrossMemoryAttachBytes = 64 * 1024;

enum class BlockRoute : std::uint8_t {
  kKernelCopy = 0,  // each rank reads its blocks from the peers' buffers (process_vm_readv)
  kSlots = 1,       // rounds through the senders' staging slots: two copies, through the cache
};

inline const char* way_name(BlockRoute route) {
  return route == BlockRoute::kKernelCopy ? "by the kernel's copy" : "through the slots";
}

}  // namespace collective::internal
