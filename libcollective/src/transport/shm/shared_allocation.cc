#include "transport/shm/shared_allocation.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "collective/errors.h"
#include "transport/shm/shared_object_owner.h"
#include "core/log.h"

namespace collective::internal {
namespace {

std::size_t page_rounded(std::size_t bytes) {
  const long page = sysconf(_SC_PAGESIZE);
  const std::size_t unit = page > 0 ? static_cast<std::size_t>(page) : 4096;
  return (bytes + unit - 1) / unit * unit;
}

std::string errno_text() { return std::strerror(errno); }

// SharedRange::id: the allocation counter names the object, the descriptor
// is where a peer finds it once the name is gone.
constexpr int kDescriptorBits = 32;
std::uint64_t range_id(std::uint64_t counter, int fd) {
  return counter << kDescriptorBits | static_cast<std::uint32_t>(fd);
}
std::uint64_t counter_of(std::uint64_t id) { return id >> kDescriptorBits; }
int descriptor_of(std::uint64_t id) { return static_cast<int>(id & 0xffffffffu); }

void release(void* base, std::size_t mapped_bytes, int fd) {
  munmap(base, mapped_bytes);
  close(fd);
}

}  // namespace

std::string shared_allocation_name(const std::string& owner, std::uint64_t id) {
  return "/collective-mem-" + owner + "-" + std::to_string(id);
}

int create_own_shared_object(const char* name) {
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 && errno == EEXIST) {
    COLLECTIVE_LOG(kInfo, "removing the stale shared-memory object " << name);
    shm_unlink(name);
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  }
  return fd;
}

void* SharedAllocations::allocate(std::size_t bytes, int rank) {
  if (bytes == 0) return nullptr;
  const char* operation = "Communicator::allocate";
  if (bytes > (std::size_t{1} << 46)) {
    throw InvalidArgumentError(operation, rank,
                               std::to_string(bytes) + " bytes is more than 64 TiB");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const std::uint64_t id = next_id_++;
  const std::string name = shared_allocation_name(owner_tag(), id);
  const std::size_t mapped = page_rounded(bytes);
  const int fd = create_own_shared_object(name.c_str());
  if (fd < 0) {
    throw CommunicationError(operation, rank, "shm_open(" + name + ") failed: " + errno_text());
  }
  // Reserved now: on a /dev/shm too small the first touch of a page would
  // otherwise kill the process with SIGBUS.
  int error = ftruncate(fd, static_cast<off_t>(mapped)) != 0 ? errno : 0;
  if (error == 0) error = posix_fallocate(fd, 0, static_cast<off_t>(mapped));
  if (error != 0) {
    close(fd);
    shm_unlink(name.c_str());
    throw CommunicationError(operation, rank,
                             "cannot reserve " + std::to_string(mapped) +
                                 " bytes in /dev/shm for " + name + ": " + std::strerror(error) +
                                 " (is /dev/shm large enough?)");
  }
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const std::string why = errno_text();
  // The name goes now: from here on only descriptors and mappings hold the
  // memory, which the kernel frees when the last of them goes.
  shm_unlink(name.c_str());
  if (base == MAP_FAILED) {
    close(fd);
    throw CommunicationError(operation, rank, "mmap of " + name + " failed: " + why);
  }
  try {
    entries_.push_back(Entry{static_cast<std::byte*>(base), bytes, mapped, range_id(id, fd), fd});
  } catch (...) {
    release(base, mapped, fd);
    throw;
  }
  return base;
}

void SharedAllocations::deallocate(void* memory, int rank) {
  if (memory == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->base != memory) continue;
    release(it->base, it->mapped_bytes, it->fd);
    entries_.erase(it);
    return;
  }
  std::ostringstream pointer;
  pointer << memory;
  throw InvalidArgumentError("Communicator::deallocate", rank,
                             pointer.str() +
                                 " was not returned by Communicator::allocate "
                                 "(or was deallocated already)");
}

std::optional<SharedRange> SharedAllocations::find(const void* pointer, std::size_t bytes) const {
  const auto* begin = static_cast<const std::byte*>(pointer);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Entry& entry : entries_) {
    if (begin >= entry.base && begin <= entry.base + entry.bytes &&
        bytes <= static_cast<std::size_t>(entry.base + entry.bytes - begin)) {
      return SharedRange{static_cast<std::int64_t>(getpid()), entry.id, entry.mapped_bytes,
                         static_cast<std::uint64_t>(begin - entry.base)};
    }
  }
  return std::nullopt;
}

SharedAllocations::~SharedAllocations() {
  // The names went when the objects were made; the memory goes with the
  // last descriptor and mapping.
  for (const Entry& entry : entries_) release(entry.base, entry.mapped_bytes, entry.fd);
}

SharedAllocations& shared_allocations() {
  static SharedAllocations registry;
  return registry;
}

PeerMappings::~PeerMappings() {
  for (const Mapping& mapping : mappings_) munmap(mapping.base, mapping.bytes);
}

const std::byte* PeerMappings::map(const SharedRange& range, const std::string& operation,
                                   int rank) {
  for (auto it = mappings_.begin(); it != mappings_.end(); ++it) {
    if (it->pid == range.pid && it->id == range.id && it->bytes >= range.mapped_bytes) {
      mappings_.splice(mappings_.begin(), mappings_, it);
      return mappings_.front().base + range.offset;
    }
  }
  // The object has no name any more: it is opened through the owner's
  // descriptor. The owner's start time completes the name the descriptor
  // must still show, so a descriptor number reused for something else (the
  // buffer deallocated during the call) or a pid reused by another process
  // is refused rather than mapped.
  const std::string name = shared_allocation_name(owner_tag_of(range.pid), counter_of(range.id));
  const std::string path =
      "/proc/" + std::to_string(range.pid) + "/fd/" + std::to_string(descriptor_of(range.id));
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw CommunicationError(operation, rank,
                             "cannot open a peer's buffer " + name + " through " + path + ": " +
                                 errno_text() +
                                 " (was it deallocated during the call? Peers open it through "
                                 "the owner's /proc entry, which needs the same user)");
  }
  char link[512];
  const ssize_t length = readlink(path.c_str(), link, sizeof link - 1);
  const std::string target = length > 0 ? std::string(link, static_cast<std::size_t>(length)) : "";
  const std::string expected = name + " (deleted)";
  if (target.size() < expected.size() ||
      target.compare(target.size() - expected.size(), expected.size(), expected) != 0) {
    close(fd);
    throw CommunicationError(operation, rank,
                             "a peer's buffer " + name + " is no longer at " + path +
                                 " (it holds " +
                                 (target.empty() ? std::string("nothing") : target) +
                                 "): was it deallocated during the call?");
  }
  void* base = mmap(nullptr, range.mapped_bytes, PROT_READ, MAP_SHARED, fd, 0);
  const std::string why = errno_text();
  close(fd);
  if (base == MAP_FAILED) {
    throw CommunicationError(operation, rank, "cannot map a peer's buffer " + name + ": " + why);
  }
  mappings_.push_front(Mapping{range.pid, range.id, static_cast<std::byte*>(base),
                               static_cast<std::size_t>(range.mapped_bytes)});
  if (mappings_.size() > kCapacity) {
    munmap(mappings_.back().base, mappings_.back().bytes);
    mappings_.pop_back();
  }
  return mappings_.front().base + range.offset;
}

}  // namespace collective::internal
