// Memory the library hands out (Communicator::allocate) that other
// processes on the node can map: each allocation is a POSIX shared-memory
// object named after its process and a counter. A shared-memory collective
// whose input lies in such an allocation tells its peers where, and they
// read it in place instead of from a copy in the node segment.
//
// The name lives only while the object is made: it is unlinked as soon as
// it is reserved and mapped, and the owner keeps it open. Peers open it
// through the owner's descriptor, /proc/<pid>/fd/<fd>, so when the owner
// ends, however it ends (SIGTERM, SIGKILL), the kernel frees the memory
// once the last peer unmaps it and nothing is left in /dev/shm.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace collective::internal {

// Where a byte range lies, in terms another process can map.
struct SharedRange {
  std::int64_t pid = 0;            // creating process
  std::uint64_t id = 0;            // its allocation counter << 32 | its descriptor
  std::uint64_t mapped_bytes = 0;  // the whole allocation
  std::uint64_t offset = 0;        // of the range's first byte
};

// "/collective-mem-<owner tag>-<id>" (shared_object_owner.h).
std::string shared_allocation_name(const std::string& owner, std::uint64_t id);

// shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600) for a name that carries
// this process's owner tag: an object already there was left by a dead
// process (a crash skips the unlink), since no live process but this one
// can own such a name, so it is removed and the creation retried once.
// Returns the descriptor, or -1 with errno set.
int create_own_shared_object(const char* name);

class SharedAllocations {
 public:
  // See Communicator::allocate / deallocate; `rank` appears in errors.
  void* allocate(std::size_t bytes, int rank);
  void deallocate(void* memory, int rank);
  // The allocation holding all of [pointer, pointer + bytes), if any.
  std::optional<SharedRange> find(const void* pointer, std::size_t bytes) const;
  ~SharedAllocations();

 private:
  struct Entry {
    std::byte* base;
    std::size_t bytes;         // asked for
    std::size_t mapped_bytes;  // page-rounded
    std::uint64_t id;          // counter << 32 | fd (SharedRange::id)
    int fd;                    // kept open: the peers' way in
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  std::uint64_t next_id_ = 0;
};

// The process's allocations (one registry: any communicator may use them).
SharedAllocations& shared_allocations();

// Peers' allocations mapped into this process, most recently used first.
// Bounded: beyond kCapacity mappings the least recently used is unmapped,
// so buffers a peer freed long ago do not stay mapped here forever.
class PeerMappings {
 public:
  static constexpr std::size_t kCapacity = 32;
  PeerMappings() = default;
  ~PeerMappings();
  PeerMappings(const PeerMappings&) = delete;
  PeerMappings& operator=(const PeerMappings&) = delete;

  // The first byte of `range` in this process; throws CommunicationError
  // naming `operation`, `rank` and the object when it cannot be mapped.
  const std::byte* map(const SharedRange& range, const std::string& operation, int rank);

 private:
  struct Mapping {
    std::int64_t pid;
    std::uint64_t id;
    std::byte* base;
    std::size_t bytes;
  };
  std::list<Mapping> mappings_;
};

}  // namespace collective::internal
