// The checkpoint file format, version 1 (docs/strategies.md, "Checkpoint
// format"): encoding and the strict decoder every checkpoint read goes
// through (fuzzed by tests/fuzz/checkpoint_reader_fuzzer.cc).
//
//   "COLLCKPT"            8 bytes, magic
//   u32 version           1
//   u32 flags             0 (reserved)
//   i64 step              the training step counter
//   i64 iterations        the optimizer's step count
//   u32 count             number of variables
//   count x { u32 name_bytes, name (UTF-8, 1..4096 bytes, unique),
//             u32 dtype (collective::DataType), u32 rank (<= 32),
//             rank x i64 dim (>= 0), u64 data_bytes (= elements x size),
//             data (row-major) }
//   u32 crc32             CRC-32 (IEEE 802.3, zlib's) of every byte before it
//
// Integers are little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collective/distribute/tensor.h"

namespace collective::distribute::detail {

inline constexpr std::uint32_t kCheckpointFormatVersion = 1;
inline constexpr std::size_t kCheckpointMaxNameBytes = 4096;
inline constexpr std::uint32_t kCheckpointMaxRank = 32;

struct CheckpointData {
  std::int64_t step = 0;
  std::int64_t iterations = 0;
  std::vector<std::pair<std::string, Tensor>> variables;
};

std::uint32_t crc32(std::span<const std::byte> bytes);

std::vector<std::byte> encode_checkpoint(const CheckpointData& data);

// Raises InvalidArgumentError("<operation>", -1, "<file>: <what is wrong>")
// for anything but a well-formed version-1 file.
CheckpointData decode_checkpoint(std::span<const std::byte> bytes, const std::string& file,
                                 const std::string& operation);

}  // namespace collective::distribute::detail
