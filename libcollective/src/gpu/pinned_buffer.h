// Page-locked host memory (cudaMallocHost) that grows on demand and is
// reused between calls: the staging area of the hierarchical variant, where
// a device shard is copied out for the inter-node step and back.
#pragma once

#include <cstddef>
#include <string>

namespace collective::internal::gpu {

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  // At least `bytes` bytes; the contents are not preserved when it grows.
  // Throws CommunicationError naming operation and rank when CUDA cannot
  // allocate.
  std::byte* get(std::size_t bytes, const std::string& operation, int rank);

 private:
  void release() noexcept;
  std::byte* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace collective::internal::gpu
