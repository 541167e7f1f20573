// misaligned_copy_probe: a benchmark (never run as a test) of copies
// between addresses that differ modulo 16, behind kernels/plain_copy.h
// (docs/performance_history.md, "Copies between addresses that differ
// modulo 16"). One process, buffers in its cache where they fit; per size
// and destination offset (0 or 4 bytes past a 64-byte boundary, the source
// on one), the best of many repetitions of:
//
//   memcpy        glibc's
//   plain_copy    the library's: memcpy, or its vector loop for a
//                 misaligned pair over 2 KiB
//   cma           process_vm_readv from this process into the destination
//   cma bounced   process_vm_readv into a buffer aligned like the source,
//                 256 KiB at a time, then plain_copy (what the
//                 exchange's single copy does for a misaligned pair)
//
//   misaligned_copy_probe [largest MiB, default 16]
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/plain_copy.h"

namespace {

using collective::internal::plain_copy;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kBounceBytes = 256 * 1024;

void cma(std::byte* to, const std::byte* from, std::size_t bytes) {
  iovec local{to, bytes};
  iovec remote{const_cast<std::byte*>(from), bytes};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != static_cast<ssize_t>(bytes)) {
    std::perror("process_vm_readv");
    std::exit(1);
  }
}

template <typename Copy>
double best_microseconds(Copy copy, std::size_t bytes) {
  const int repetitions = bytes >= (std::size_t{1} << 20) ? 20 : 200;
  double best = 1e30;
  for (int i = 0; i < repetitions; ++i) {
    const auto start = Clock::now();
    copy();
    best = std::min(best, std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t largest = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 16) << 20;
  std::vector<std::byte> source_storage(largest + 128), destination_storage(largest + 128);
  std::vector<std::byte> bounce_storage(kBounceBytes + 128);
  auto aligned = [](std::vector<std::byte>& storage) {
    const auto at = reinterpret_cast<std::uintptr_t>(storage.data());
    return reinterpret_cast<std::byte*>((at + 63) & ~std::uintptr_t{63});
  };
  std::byte* source = aligned(source_storage);
  std::byte* bounce = aligned(bounce_storage);
  std::memset(source, 1, largest);
  std::memset(aligned(destination_storage), 2, largest + 64);
  std::printf("%10s %6s %10s %10s %10s %12s  (microseconds, best of many)\n", "bytes", "offset",
              "memcpy", "plain_copy", "cma", "cma bounced");
  for (std::size_t bytes = 4096; bytes <= largest; bytes *= 4) {
    for (const std::size_t offset : {std::size_t{0}, std::size_t{4}}) {
      std::byte* destination = aligned(destination_storage) + offset;
      const double memcpy_us =
          best_microseconds([&] { std::memcpy(destination, source, bytes); }, bytes);
      const double plain_us =
          best_microseconds([&] { plain_copy(destination, source, bytes); }, bytes);
      const double cma_us = best_microseconds([&] { cma(destination, source, bytes); }, bytes);
      const double bounced_us = best_microseconds(
          [&] {
            for (std::size_t done = 0; done < bytes; done += kBounceBytes) {
              const std::size_t piece = std::min(kBounceBytes, bytes - done);
              cma(bounce, source + done, piece);
              plain_copy(destination + done, bounce, piece);
            }
          },
          bytes);
      std::printf("%10zu %6zu %10.2f %10.2f %10.2f %12.2f\n", bytes, offset, memcpy_us, plain_us,
                  cma_us, bounced_us);
    }
  }
  return 0;
}
