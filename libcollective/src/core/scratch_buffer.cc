#include "core/scratch_buffer.h"

#include <cstdlib>
#include <new>

namespace collective::internal {

ScratchBuffer::~ScratchBuffer() { std::free(data_); }

std::byte* ScratchBuffer::get(std::size_t bytes) {
  if (bytes <= capacity_ && data_ != nullptr) return data_;
  std::free(data_);
  data_ = nullptr;
  capacity_ = 0;
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  void* memory = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (memory == nullptr) throw std::bad_alloc();
  data_ = static_cast<std::byte*>(memory);
  capacity_ = rounded;
  return data_;
}

void ScratchBuffer::abandon() {
  data_ = nullptr;
  capacity_ = 0;
}

}  // namespace collective::internal
