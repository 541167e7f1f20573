// A growable, 64-byte aligned scratch area owned by a communicator and
// reused across calls, so the hot path does not allocate.
#pragma once

#include <cstddef>

namespace collective::internal {

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ~ScratchBuffer();
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  // At least `bytes` bytes; previous contents are not kept.
  std::byte* get(std::size_t bytes);

  // Gives up ownership without freeing: used after a timeout, when MPI may
  // still write into the area through requests that could not be completed.
  void abandon();

 private:
  std::byte* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace collective::internal
