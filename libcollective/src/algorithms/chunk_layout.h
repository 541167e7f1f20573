// How a buffer of `count` elements is cut into one chunk per rank, and each
// chunk into pipeline segments. Pure arithmetic, unit-tested without MPI.
#pragma once

#include <cstddef>

namespace collective::internal {

class ChunkLayout {
 public:
  // Balanced: chunk c gets count/parts elements, plus one for the first
  // count%parts chunks (all_reduce, reduce).
  static ChunkLayout balanced(std::size_t count, int parts);
  // Equal blocks of block_count elements (reduce_scatter, all_gather).
  static ChunkLayout blocks(std::size_t block_count, int parts);

  std::size_t offset(int chunk) const;  // in elements
  std::size_t length(int chunk) const;  // in elements
  int parts() const { return parts_; }
  std::size_t max_length() const { return base_ + (remainder_ > 0 ? 1 : 0); }

 private:
  ChunkLayout(std::size_t base, std::size_t remainder, int parts)
      : base_(base), remainder_(remainder), parts_(parts) {}
  std::size_t base_;
  std::size_t remainder_;
  int parts_;
};

// Segments of a chunk: segment j of a chunk of `length` elements covers
// [j * segment_elements, min(length, (j + 1) * segment_elements)).
struct Segmentation {
  std::size_t segment_elements;
  std::size_t segments(std::size_t length) const {
    return (length + segment_elements - 1) / segment_elements;
  }
  std::size_t begin(std::size_t segment) const { return segment * segment_elements; }
  std::size_t length(std::size_t chunk_length, std::size_t segment) const {
    const std::size_t start = begin(segment);
    return chunk_length - start < segment_elements ? chunk_length - start : segment_elements;
  }
};

// Segment size in elements for a segment budget in bytes (at least one).
Segmentation segmentation_for(std::size_t segment_bytes, std::size_t element_bytes);

// (value mod parts) for possibly negative values.
inline int ring_index(long long value, int parts) {
  const long long m = value % parts;
  return static_cast<int>(m < 0 ? m + parts : m);
}

}  // namespace collective::internal
