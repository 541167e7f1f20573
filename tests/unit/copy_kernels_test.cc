// plain_copy and streaming_copy against every alignment of source and
// destination that matters (the 16-byte vectors and the 64-byte loop), on
// both sides of plain_copy's threshold: every byte copied, none written
// outside the destination.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/plain_copy.h"
#include "kernels/streaming_copy.h"

namespace collective::internal {
namespace {

using CopyFunction = void (*)(void*, const void*, std::size_t);

constexpr std::size_t kGuard = 64;
constexpr std::byte kUntouched{0xA5};

// The value at byte i of a source: not a multiple of any power of two's
// period, so a shifted or repeated copy shows.
std::byte source_byte(std::size_t i) { return static_cast<std::byte>((i * 7 + i / 251) % 253); }

// Copies `bytes` from a source at `from_offset` to a destination at
// `to_offset` (each from a 64-byte boundary) and checks every byte of the
// destination and the guards around it; the first failure names where.
void check_copy(CopyFunction copy, const char* name, std::size_t bytes, std::size_t from_offset,
                std::size_t to_offset) {
  std::vector<std::byte> from_storage(bytes + 2 * kGuard + 64);
  std::vector<std::byte> to_storage(bytes + 2 * kGuard + 64, kUntouched);
  auto aligned = [](std::byte* p) {
    return reinterpret_cast<std::byte*>((reinterpret_cast<std::uintptr_t>(p) + 63) &
                                        ~std::uintptr_t{63});
  };
  std::byte* from = aligned(from_storage.data()) + from_offset;
  std::byte* to_base = aligned(to_storage.data());
  std::byte* to = to_base + kGuard + to_offset;
  for (std::size_t i = 0; i < bytes; ++i) from[i] = source_byte(i);
  copy(to, from, bytes);
  const std::string where = std::string(name) + ", " + std::to_string(bytes) +
                            " bytes from offset " + std::to_string(from_offset) + " to offset " +
                            std::to_string(to_offset);
  for (std::size_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(to[i], source_byte(i)) << where << ": byte " << i;
  }
  for (std::byte* p = to_storage.data(); p < to; ++p) {
    ASSERT_EQ(*p, kUntouched) << where << ": written " << (to - p)
                              << " bytes before the destination";
  }
  for (std::byte* p = to + bytes; p < to_storage.data() + to_storage.size(); ++p) {
    ASSERT_EQ(*p, kUntouched) << where << ": written " << (p - to - bytes)
                              << " bytes past the destination";
  }
}

const std::vector<std::size_t>& sizes() {
  static const std::vector<std::size_t> all = {0,
                                               1,
                                               15,
                                               16,
                                               17,
                                               63,
                                               64,
                                               65,
                                               127,
                                               kMisalignedCopyThreshold - 1,
                                               kMisalignedCopyThreshold,
                                               kMisalignedCopyThreshold + 1,
                                               4095,
                                               4096,
                                               4097,
                                               65536 + 13,
                                               300001};
  return all;
}

// check_copy at every size, 5 source and 32 destination offsets; stops at
// the first failure.
void check_every_alignment(CopyFunction copy, const char* name) {
  for (const std::size_t bytes : sizes()) {
    for (std::size_t from_offset : {0, 1, 4, 8, 15}) {
      for (std::size_t to_offset = 0; to_offset < 32; ++to_offset) {
        check_copy(copy, name, bytes, from_offset, to_offset);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(CopyKernelsTest, PlainCopyEveryAlignment) { check_every_alignment(plain_copy, "plain_copy"); }

TEST(CopyKernelsTest, StreamingCopyEveryAlignment) {
  check_every_alignment(streaming_copy, "streaming_copy");
}

TEST(CopyKernelsTest, MisalignedPairIsModulo16) {
  EXPECT_FALSE(misaligned_pair(0x1000, 0x2000));
  EXPECT_FALSE(misaligned_pair(0x1010, 0x2000));
  EXPECT_TRUE(misaligned_pair(0x1004, 0x2000));
  EXPECT_TRUE(misaligned_pair(0x1008, 0x2010));
  EXPECT_FALSE(misaligned_pair(0x1033, 0x2003));
}

}  // namespace
}  // namespace collective::internal
