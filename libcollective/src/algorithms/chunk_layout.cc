#include "algorithms/chunk_layout.h"

namespace collective::internal {

ChunkLayout ChunkLayout::balanced(std::size_t count, int parts) {
  const auto n = static_cast<std::size_t>(parts);
  return ChunkLayout(count / n, count % n, parts);
}

ChunkLayout ChunkLayout::blocks(std::size_t block_count, int parts) {
  return ChunkLayout(block_count, 0, parts);
}

ChunkLayout ChunkLayout::uneven(std::span<const std::size_t> offsets,
                                std::span<const std::size_t> lengths) {
  ChunkLayout layout(0, 0, static_cast<int>(lengths.size()));
  layout.offsets_ = offsets;
  layout.lengths_ = lengths;
  return layout;
}

ChunkLayout ChunkLayout::packed(std::span<const std::size_t> lengths) {
  ChunkLayout layout(0, 0, static_cast<int>(lengths.size()));
  layout.packed_offsets_.resize(lengths.size());
  std::size_t at = 0;
  for (std::size_t c = 0; c < lengths.size(); ++c) {
    layout.packed_offsets_[c] = at;
    at += lengths[c];
  }
  layout.lengths_ = lengths;
  return layout;
}

std::size_t ChunkLayout::max_length() const {
  if (lengths_.empty()) return base_ + (remainder_ > 0 ? 1 : 0);
  std::size_t longest = 0;
  for (const std::size_t length : lengths_) longest = length > longest ? length : longest;
  return longest;
}

Segmentation segmentation_for(std::size_t segment_bytes, std::size_t element_bytes) {
  const std::size_t elements = segment_bytes / element_bytes;
  return Segmentation{elements == 0 ? 1 : elements};
}

}  // namespace collective::internal
