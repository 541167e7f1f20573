// How a buffer of `count` elements is cut into one chunk per rank, and each
// chunk into pipeline segments. Pure arithmetic, unit-tested without MPI.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace collective::internal {

class ChunkLayout {
 public:
  // Balanced: chunk c gets count/parts elements, plus one for the first
  // count%parts chunks (all_reduce, reduce).
  static ChunkLayout balanced(std::size_t count, int parts);
  // Equal blocks of block_count elements (reduce_scatter, all_gather).
  static ChunkLayout blocks(std::size_t block_count, int parts);
  // Chunk c at offsets[c] with lengths[c] elements (all_gather_v's
  // displacements); the spans must outlive the layout.
  static ChunkLayout uneven(std::span<const std::size_t> offsets,
                            std::span<const std::size_t> lengths);
  // Chunks one after another with these lengths (reduce_scatter_v's input).
  static ChunkLayout packed(std::span<const std::size_t> lengths);

  std::size_t offset(int chunk) const {  // in elements
    if (!lengths_.empty()) {
      const auto c = static_cast<std::size_t>(chunk);
      return packed_offsets_.empty() ? offsets_[c] : packed_offsets_[c];
    }
    const auto c = static_cast<std::size_t>(chunk);
    return c * base_ + (c < remainder_ ? c : remainder_);
  }
  std::size_t length(int chunk) const {  // in elements
    if (!lengths_.empty()) return lengths_[static_cast<std::size_t>(chunk)];
    return base_ + (static_cast<std::size_t>(chunk) < remainder_ ? 1 : 0);
  }
  int parts() const { return parts_; }
  std::size_t max_length() const;

 private:
  ChunkLayout(std::size_t base, std::size_t remainder, int parts)
      : base_(base), remainder_(remainder), parts_(parts) {}
  std::size_t base_ = 0;
  std::size_t remainder_ = 0;
  int parts_ = 0;
  // Uneven chunks: where each starts (offsets_, or packed_offsets_ which
  // the layout owns), and how long it is (empty otherwise).
  std::span<const std::size_t> offsets_;
  std::span<const std::size_t> lengths_;
  std::vector<std::size_t> packed_offsets_;
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
