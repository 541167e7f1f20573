// collective_kernel_bench: throughput of the element-wise reduction kernels
// (the arithmetic of every reducing collective), generic vs AVX2, per type,
// against a plain memcpy of the same bytes as the memory-bandwidth yardstick.
//
//   collective_kernel_bench [bytes-per-buffer (default 32 MiB)] [repetitions (default 20)]
//
// GB/s counts the bytes touched: two inputs read and one output written.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <charconv>
#include <cstring>
#include <optional>
#include <system_error>
#include <vector>

#include "collective/types.h"
#include "kernels/reduce_kernels.h"

namespace {

using collective::DataType;
using collective::ReduceOp;
using collective::internal::KernelIsa;

template <typename Body>
double median_seconds(int repetitions, Body body) {
  std::vector<double> times;
  for (int i = 0; i < repetitions; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// A whole decimal number of at least `minimum`, or nothing.
template <typename Integer>
std::optional<Integer> parse_argument(const char* text, Integer minimum) {
  Integer value{};
  const char* end = text + std::strlen(text);
  const auto [stop, error] = std::from_chars(text, end, value);
  if (error != std::errc() || stop != end || value < minimum) return std::nullopt;
  return value;
}

int run(std::size_t bytes, int repetitions) {
  std::vector<unsigned char> a(bytes, 1), b(bytes, 2), out(bytes, 0);
  // Small values in every type: bytes of 1 and 2 are valid numbers everywhere.
  const double copy =
      median_seconds(repetitions, [&] { std::memcpy(out.data(), a.data(), bytes); });
  std::printf("# buffer %zu bytes, %d repetitions, median; memcpy %.2f GB/s (read+write)\n", bytes,
              repetitions, 2.0 * bytes / copy / 1e9);
  std::printf("%-10s %-6s %12s %12s %8s\n", "type", "op", "generic GB/s", "avx2 GB/s", "speedup");
  for (int t = 0; t < collective::kNumDataTypes; ++t) {
    const auto type = static_cast<DataType>(t);
    const std::size_t count = bytes / collective::element_size(type);
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      double rate[2] = {0, 0};
      for (KernelIsa isa : {KernelIsa::kGeneric, KernelIsa::kAvx2}) {
        if (!collective::internal::kernel_isa_available(isa)) continue;
        const double seconds = median_seconds(repetitions, [&] {
          collective::internal::reduce_buffers_with(isa, out.data(), a.data(), b.data(), count,
                                                    type, op, 1);
        });
        rate[isa == KernelIsa::kAvx2 ? 1 : 0] = 3.0 * bytes / seconds / 1e9;
      }
      std::printf("%-10s %-6s %12.2f %12.2f %7.2fx\n", collective::to_string(type).data(),
                  collective::to_string(op).data(), rate[0], rate[1],
                  rate[0] > 0 ? rate[1] / rate[0] : 0.0);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Anything else (--help, "1M", a third argument) gets the usage line
  // rather than being read as 0 bytes or 0 repetitions.
  const auto bytes = argc > 1 ? parse_argument<std::size_t>(argv[1], 1) : std::size_t{32} << 20;
  const auto repetitions = argc > 2 ? parse_argument<int>(argv[2], 1) : 20;
  if (argc > 3 || !bytes || !repetitions) {
    std::fprintf(stderr,
                 "usage: collective_kernel_bench [bytes-per-buffer >= 1 (default 33554432)] "
                 "[repetitions >= 1 (default 20)]\n");
    return 2;
  }
  return run(*bytes, *repetitions);
}
