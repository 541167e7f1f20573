// A page-aligned buffer that only grows, its pages touched when allocated
// so the first timed iteration does not pay for page faults.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace collective::bench {

class AlignedBuffer {
 public:
  void reserve(std::size_t bytes) {
    if (bytes <= capacity_ && data_) return;
    constexpr std::size_t kAlignment = 4096;
    const std::size_t rounded =
        (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    data_.reset();
    void* memory = std::aligned_alloc(kAlignment, rounded);
    if (memory == nullptr) throw std::bad_alloc();
    std::memset(memory, 0, rounded);
    data_.reset(memory);
    capacity_ = rounded;
  }
  void* data() const { return data_.get(); }
  std::size_t capacity() const { return capacity_; }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  std::size_t capacity_ = 0;
};

}  // namespace collective::bench
