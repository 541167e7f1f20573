// Same-node staging for the parameter-server transport: a POSIX shared
// memory segment that one requester (chief or worker) shares with one ps
// task of its node. A large payload (an update's value, a read's reply) is
// copied into it instead of being sent as an MPI message; the request and
// reply headers still travel over the wire, so the ps applies requests one
// at a time in arrival order (atomic per variable) exactly as before.
//
// The requester creates the segment (name carries the job's token, both
// ranks and a generation; a larger payload makes a new generation); the ps
// maps it on the first request that names it and unlinks the name at once,
// so nothing is left in /dev/shm once both sides have it mapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace collective::distribute::detail {

class StagingSegment {
 public:
  // "/collective-ps-<token>-<requester>-<ps>-<generation>".
  static std::string name(const std::string& job_token, int requester_rank, int ps_rank,
                          std::uint64_t generation);
  // Creates and maps a new segment of `bytes` (CommunicationError naming
  // `what`, the rank and the errno text when the system refuses).
  static std::unique_ptr<StagingSegment> create(const std::string& name, std::size_t bytes,
                                                const std::string& what, int rank);
  // Maps an existing segment (its size from the file) and unlinks its name.
  static std::unique_ptr<StagingSegment> open(const std::string& name, const std::string& what,
                                              int rank);

  ~StagingSegment();
  StagingSegment(const StagingSegment&) = delete;
  StagingSegment& operator=(const StagingSegment&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  StagingSegment(std::string name, std::byte* data, std::size_t size, bool owns_name)
      : name_(std::move(name)), data_(data), size_(size), owns_name_(owns_name) {}
  std::string name_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool owns_name_ = false;  // the creator unlinks at destruction if the ps never did
};

}  // namespace collective::distribute::detail
