#include "ps/ps_staging.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "collective/errors.h"

namespace collective::distribute::detail {

namespace {

[[noreturn]] void refuse(const std::string& what, int rank, const std::string& call,
                         const std::string& name) {
  const int error = errno;
  throw CommunicationError(
      what, rank,
      call + " of same-node staging segment " + name + " failed: " + std::strerror(error) +
          " (set COLLECTIVE_PS_SHARED_MEMORY=0 to send every payload as MPI messages)");
}

// "N bytes free in /dev/shm", for the error that says why a segment did not fit.
std::string free_bytes_text() {
  struct statvfs info {};
  if (statvfs("/dev/shm", &info) != 0)
    return std::string("free space of /dev/shm unknown: ") + std::strerror(errno);
  return std::to_string(static_cast<unsigned long long>(info.f_bavail) * info.f_frsize) +
         " bytes free in /dev/shm";
}

std::byte* map(int fd, std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
}

}  // namespace

std::string StagingSegment::name(const std::string& job_token, int requester_rank, int ps_rank,
                                 std::uint64_t generation) {
  return "/collective-ps-" + job_token + "-" + std::to_string(requester_rank) + "-" +
         std::to_string(ps_rank) + "-" + std::to_string(generation);
}

std::unique_ptr<StagingSegment> StagingSegment::create(const std::string& name, std::size_t bytes,
                                                       const std::string& what, int rank) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) refuse(what, rank, "shm_open", name);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int error = errno;
    close(fd);
    shm_unlink(name.c_str());
    errno = error;
    refuse(what, rank, "ftruncate", name);
  }
  // Reserved now, as the core's node segment is: a /dev/shm too small is an
  // error here, not a SIGBUS at the first touch of a page (by this rank's
  // copy, or by the ps writing a read's value).
  int error = 0;
  do {
    error = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  } while (error == EINTR);
  if (error != 0) {
    close(fd);
    shm_unlink(name.c_str());
    throw CommunicationError(
        what, rank,
        "cannot reserve " + std::to_string(bytes) +
            " bytes in /dev/shm for same-node staging "
            "segment " +
            name + ": " + std::strerror(error) + " (" + free_bytes_text() +
            "); set COLLECTIVE_PS_SHARED_MEMORY=0 to send every payload as MPI messages");
  }
  std::byte* data = map(fd, bytes);
  error = errno;
  close(fd);
  if (data == nullptr) {
    shm_unlink(name.c_str());
    errno = error;
    refuse(what, rank, "mmap", name);
  }
  return std::unique_ptr<StagingSegment>(new StagingSegment(name, data, bytes, true));
}

std::unique_ptr<StagingSegment> StagingSegment::open(const std::string& name,
                                                     const std::string& what, int rank) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) refuse(what, rank, "shm_open", name);
  struct stat info {};
  if (fstat(fd, &info) != 0 || info.st_size <= 0) {
    const int error = errno;
    close(fd);
    errno = error;
    refuse(what, rank, "fstat", name);
  }
  const auto bytes = static_cast<std::size_t>(info.st_size);
  std::byte* data = map(fd, bytes);
  const int error = errno;
  close(fd);
  // Both sides hold a mapping now: the name is no longer needed.
  shm_unlink(name.c_str());
  if (data == nullptr) {
    errno = error;
    refuse(what, rank, "mmap", name);
  }
  return std::unique_ptr<StagingSegment>(new StagingSegment(name, data, bytes, false));
}

StagingSegment::~StagingSegment() {
  if (data_ != nullptr) munmap(data_, size_);
  // ENOENT when the ps already unlinked it: nothing to do.
  if (owns_name_) shm_unlink(name_.c_str());
}

}  // namespace collective::distribute::detail
