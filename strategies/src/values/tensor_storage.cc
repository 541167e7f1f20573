// TensorStorage and the process's cache of tensor blocks.
//
// Why a cache: a block that malloc hands out fresh (anything it maps rather
// than takes from its heap, which glibc does above its mmap threshold, at
// most 32 MiB) has to be faulted in page by page on first touch; measured
// on the development VM that is about 100 ms for 64 MiB, where the
// all-reduce of 64 MiB between two ranks takes 20-40 ms. A training step
// allocates the same sizes every time (results, gradients, packs), so
// blocks freed by one step are kept and handed to the next, as TensorFlow's
// and PyTorch's allocators do.
//
// Policy: blocks of at least kMinCachedBytes are rounded up to whole pages;
// a freed one is kept while the cache holds at most
// COLLECTIVE_TENSOR_CACHE_BYTES (default 512 MiB; 0 turns the cache off),
// evicting the blocks freed longest ago. A request takes the smallest
// cached block that is at least as large and at most a quarter larger.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#include "collective/in_tree/parameters.h"

#include "collective/distribute/tensor.h"
#include "collective/errors.h"

namespace collective::distribute::detail {
namespace {

constexpr std::align_val_t kAlignment{64};  // cache lines, and what vector kernels like
// Smaller blocks come from malloc's heap free lists, which reuse memory
// without page faults; caching them would only add a lock.
constexpr std::size_t kMinCachedBytes = std::size_t{64} << 10;
constexpr std::size_t kPageBytes = 4096;
constexpr std::size_t kDefaultLimitBytes = std::size_t{512} << 20;

std::size_t limit_from_environment() {
  // The library's parameter reader: digits with an optional K, M or G.
  try {
    return bytes_parameter("COLLECTIVE_TENSOR_CACHE_BYTES", 0, SIZE_MAX)
        .value_or(kDefaultLimitBytes);
  } catch (const InvalidArgumentError& error) {
    throw InvalidArgumentError("Tensor", -1,
                               error.cause() + " (0 turns the tensor block cache off)");
  }
}

class BlockCache {
 public:
  BlockCache() : limit_(limit_from_environment()) {}

  std::byte* take(std::size_t& capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.lower_bound(capacity);
    if (it == blocks_.end() || it->first > capacity + capacity / 4) return nullptr;
    capacity = it->first;
    std::byte* block = it->second.block;
    cached_bytes_ -= it->first;
    blocks_.erase(it);
    return block;
  }

  // Keeps the block, or returns false when it cannot fit under the limit.
  bool keep(std::byte* block, std::size_t capacity) {
    if (capacity > limit_) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    while (cached_bytes_ + capacity > limit_) {
      auto oldest = std::min_element(
          blocks_.begin(), blocks_.end(),
          [](const auto& a, const auto& b) { return a.second.freed_at < b.second.freed_at; });
      ::operator delete(oldest->second.block, kAlignment);
      cached_bytes_ -= oldest->first;
      blocks_.erase(oldest);
    }
    blocks_.emplace(capacity, Entry{block, ++clock_});
    cached_bytes_ += capacity;
    return true;
  }

 private:
  struct Entry {
    std::byte* block;
    std::uint64_t freed_at;
  };
  const std::size_t limit_;
  std::mutex mutex_;
  std::multimap<std::size_t, Entry> blocks_;  // by capacity
  std::size_t cached_bytes_ = 0;
  std::uint64_t clock_ = 0;
};

// Never destroyed: tensors in static storage may outlive every other static.
BlockCache& cache() {
  static BlockCache* instance = new BlockCache();
  return *instance;
}

std::byte* allocate(std::size_t bytes, std::size_t& capacity) {
  if (bytes == 0) {
    capacity = 0;
    return nullptr;
  }
  if (bytes < kMinCachedBytes) {
    capacity = bytes;
    return static_cast<std::byte*>(::operator new(bytes, kAlignment));
  }
  capacity = (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
  if (std::byte* block = cache().take(capacity)) return block;
  return static_cast<std::byte*>(::operator new(capacity, kAlignment));
}

void deallocate(std::byte* block, std::size_t capacity) noexcept {
  if (block == nullptr) return;
  if (capacity >= kMinCachedBytes) {
    try {
      if (cache().keep(block, capacity)) return;
    } catch (...) {
      // The cache could not be set up (a bad COLLECTIVE_TENSOR_CACHE_BYTES
      // was already reported when the block was allocated): free it.
    }
  }
  ::operator delete(block, kAlignment);
}

}  // namespace

TensorStorage::TensorStorage(std::size_t bytes) : size_(bytes) {
  data_ = allocate(bytes, capacity_);
}

TensorStorage::TensorStorage(const TensorStorage& other) : TensorStorage(other.size_) {
  if (size_ > 0) std::memcpy(data_, other.data_, size_);
}

TensorStorage& TensorStorage::operator=(const TensorStorage& other) {
  if (this != &other) {
    TensorStorage copy(other);
    *this = std::move(copy);
  }
  return *this;
}

TensorStorage::TensorStorage(TensorStorage&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

TensorStorage& TensorStorage::operator=(TensorStorage&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

TensorStorage::~TensorStorage() { release(); }

void TensorStorage::release() noexcept {
  deallocate(data_, capacity_);
  data_ = nullptr;
  size_ = 0;
  capacity_ = 0;
}

}  // namespace collective::distribute::detail
