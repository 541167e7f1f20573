#include "algorithms/chunk_layout.h"

namespace collective::internal {

ChunkLayout ChunkLayout::balanced(std::size_t count, int parts) {
  const auto n = static_cast<std::size_t>(parts);
  return ChunkLayout(count / n, count % n, parts);
}

ChunkLayout ChunkLayout::blocks(std::size_t block_count, int parts) {
  return ChunkLayout(block_count, 0, parts);
}

std::size_t ChunkLayout::offset(int chunk) const {
  const auto c = static_cast<std::size_t>(chunk);
  return c * base_ + (c < remainder_ ? c : remainder_);
}

std::size_t ChunkLayout::length(int chunk) const {
  return base_ + (static_cast<std::size_t>(chunk) < remainder_ ? 1 : 0);
}

Segmentation segmentation_for(std::size_t segment_bytes, std::size_t element_bytes) {
  const std::size_t elements = segment_bytes / element_bytes;
  return Segmentation{elements == 0 ? 1 : elements};
}

}  // namespace collective::internal
