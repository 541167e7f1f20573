// Byte sizes as nccl-tests writes them on the command line ("8", "64K",
// "32M", "1G": powers of 1024) and as the benchmark prints them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace collective::bench {

// "1048576", "1024K", "1M", "1MB", "1MiB" (case-insensitive). std::nullopt
// for anything else, including values that overflow size_t.
std::optional<std::size_t> parse_byte_size(std::string_view text);

// 8 -> "8 B", 65536 -> "64 KiB", 3 << 20 -> "3 MiB", 1000 -> "1000 B".
std::string format_byte_size(std::size_t bytes);

}  // namespace collective::bench
