#include "transport/shared_futex.h"

#include <bit>
#include <climits>
#include <cstddef>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#else
#include <sched.h>
#endif

namespace collective::internal {
namespace {

// A futex is a 32-bit word: the counter's low half, which changes
// whenever the counter does (it would take 2^32 increments between two
// looks to fool it).
std::uint32_t* low_half(std::atomic<std::uint64_t>& counter) {
  static_assert(sizeof(std::atomic<std::uint64_t>) == sizeof(std::uint64_t));
  auto* bytes = reinterpret_cast<std::byte*>(&counter);
  if constexpr (std::endian::native == std::endian::big) bytes += sizeof(std::uint32_t);
  return reinterpret_cast<std::uint32_t*>(bytes);
}

}  // namespace

void store_and_wake(std::atomic<std::uint64_t>& value, std::atomic<std::uint32_t>& sleepers,
                    std::uint64_t new_value) {
  value.store(new_value, std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst) == 0) return;
#if defined(__linux__)
  // Not FUTEX_PRIVATE_FLAG: the sleepers are other processes.
  syscall(SYS_futex, low_half(value), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
#endif
}

void sleep_while(std::atomic<std::uint64_t>& value, std::atomic<std::uint32_t>& sleepers,
                 std::uint64_t seen, std::chrono::microseconds limit) {
#if defined(__linux__)
  sleepers.fetch_add(1, std::memory_order_seq_cst);
  // Checked after registering: a writer that stored before this load is
  // seen here; one that stores after it sees the registration and wakes.
  if (value.load(std::memory_order_seq_cst) == seen) {
    const long long micros = limit.count();
    const timespec relative{static_cast<time_t>(micros / 1000000),
                            static_cast<long>(micros % 1000000) * 1000};
    syscall(SYS_futex, low_half(value), FUTEX_WAIT, static_cast<std::uint32_t>(seen), &relative,
            nullptr, 0);
  }
  sleepers.fetch_sub(1, std::memory_order_release);
#else
  (void)value;
  (void)sleepers;
  (void)seen;
  (void)limit;
  sched_yield();
#endif
}

}  // namespace collective::internal
