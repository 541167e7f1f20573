#include "gpu/pinned_buffer.h"

#include <cuda_runtime_api.h>

#include "core/log.h"
#include "gpu/cuda_check.h"

namespace collective::internal::gpu {

PinnedBuffer::~PinnedBuffer() { release(); }

void PinnedBuffer::release() noexcept {
  if (data_ == nullptr) return;
  const cudaError_t error = cudaFreeHost(data_);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    COLLECTIVE_LOG(kDebug, "cudaFreeHost: " << cuda_error_text(error));
  }
  data_ = nullptr;
  capacity_ = 0;
}

std::byte* PinnedBuffer::get(std::size_t bytes, const std::string& operation, int rank) {
  if (bytes <= capacity_ && data_ != nullptr) return data_;
  release();
  void* memory = nullptr;
  check_cuda(cudaMallocHost(&memory, bytes == 0 ? 1 : bytes), "cudaMallocHost", operation, rank);
  data_ = static_cast<std::byte*>(memory);
  capacity_ = bytes;
  return data_;
}

}  // namespace collective::internal::gpu
