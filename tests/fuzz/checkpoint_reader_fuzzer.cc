// Fuzzes the checkpoint reader (strategies/src/checkpoint_format.cc), which
// reads files from disk: any input either decodes to variables that encode
// back to exactly the same bytes, or raises InvalidArgumentError. With the
// first byte odd, the harness appends the input's correct CRC-32 so that
// mutations reach the fields behind the checksum.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "checkpoint/checkpoint_format.h"
#include "collective/errors.h"

namespace cdd = collective::distribute::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data) + 1,
                               reinterpret_cast<const std::byte*>(data) + size);
  if (data[0] & 1) {
    const std::uint32_t crc = cdd::crc32(bytes);
    const auto* p = reinterpret_cast<const std::byte*>(&crc);
    bytes.insert(bytes.end(), p, p + 4);
  }
  try {
    const cdd::CheckpointData decoded =
        cdd::decode_checkpoint(bytes, "fuzz.ckpt", "Checkpoint.restore");
    if (cdd::encode_checkpoint(decoded) != bytes) {
      std::fprintf(stderr,
                   "checkpoint_reader_fuzzer: a decoded file does not encode back to itself\n");
      std::abort();
    }
  } catch (const collective::InvalidArgumentError&) {
    // Refused, as it should be.
  }
  return 0;
}
