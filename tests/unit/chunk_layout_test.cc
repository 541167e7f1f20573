#include <gtest/gtest.h>

#include "algorithms/chunk_layout.h"

namespace collective::internal {
namespace {

TEST(ChunkLayoutTest, BalancedCoversEveryElementOnce) {
  for (std::size_t count : {0u, 1u, 2u, 3u, 7u, 1023u, 1048579u}) {
    for (int parts = 1; parts <= 9; ++parts) {
      const auto layout = ChunkLayout::balanced(count, parts);
      std::size_t next = 0;
      for (int c = 0; c < parts; ++c) {
        ASSERT_EQ(layout.offset(c), next)
            << "count " << count << " parts " << parts << " chunk " << c;
        ASSERT_LE(layout.length(c), layout.max_length());
        next += layout.length(c);
      }
      ASSERT_EQ(next, count);
      // Lengths differ by at most one.
      ASSERT_LE(layout.length(0) - layout.length(parts - 1), 1u);
    }
  }
}

TEST(ChunkLayoutTest, BlocksAreEqual) {
  const auto layout = ChunkLayout::blocks(5, 3);
  EXPECT_EQ(layout.offset(2), 10u);
  EXPECT_EQ(layout.length(1), 5u);
}

TEST(ChunkLayoutTest, AboveTwoToThe32) {
  const std::size_t count = (std::size_t{1} << 33) + 5;
  const auto layout = ChunkLayout::balanced(count, 3);
  EXPECT_EQ(layout.offset(2) + layout.length(2), count);
}

TEST(SegmentationTest, SegmentsCoverChunk) {
  const Segmentation segmentation = segmentation_for(1000, 4);  // 250 elements
  EXPECT_EQ(segmentation.segment_elements, 250u);
  EXPECT_EQ(segmentation.segments(0), 0u);
  EXPECT_EQ(segmentation.segments(250), 1u);
  EXPECT_EQ(segmentation.segments(251), 2u);
  EXPECT_EQ(segmentation.length(251, 1), 1u);
  EXPECT_EQ(segmentation_for(2, 8).segment_elements, 1u);
}

TEST(RingIndexTest, WrapsNegatives) {
  EXPECT_EQ(ring_index(-1, 4), 3);
  EXPECT_EQ(ring_index(-9, 4), 3);
  EXPECT_EQ(ring_index(5, 4), 1);
}

}  // namespace
}  // namespace collective::internal
