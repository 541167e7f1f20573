// A vector that keeps its first N elements inside the object and goes to
// the heap only beyond them: the per-call lists of the hot path (a small
// all_reduce posts two transfers) then cost no allocation. For trivially
// copyable, trivially destructible elements only; neither copied nor moved,
// since the inline elements would have to move with it.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

namespace collective::internal {

template <typename T, std::size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
  static_assert(N > 0);

 public:
  SmallVector() = default;
  SmallVector(const SmallVector&) = delete;
  SmallVector& operator=(const SmallVector&) = delete;

  void push_back(const T& value) {
    if (size_ == capacity_) grow();
    ::new (static_cast<void*>(data_ + size_)) T(value);
    ++size_;
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t index) { return data_[index]; }
  const T& operator[](std::size_t index) const { return data_[index]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  void grow() {
    const std::size_t capacity = capacity_ * 2;
    auto heap = std::make_unique_for_overwrite<std::byte[]>(capacity * sizeof(T));
    std::memcpy(heap.get(), static_cast<const void*>(data_), size_ * sizeof(T));
    heap_ = std::move(heap);
    data_ = std::launder(reinterpret_cast<T*>(heap_.get()));
    capacity_ = capacity;
  }

  alignas(T) std::byte inline_[N * sizeof(T)];
  std::unique_ptr<std::byte[]> heap_;
  T* data_ = reinterpret_cast<T*>(inline_);
  std::size_t size_ = 0;
  std::size_t capacity_ = N;
};

}  // namespace collective::internal
