#include "transport/shm/shared_event.h"

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

// A futex is a 32-bit word: the count's low half, which changes whenever
// the count does (2^32 events between two looks would be needed to fool
// it).
std::uint32_t* low_half(std::atomic<std::uint64_t>& count) {
  static_assert(sizeof(std::atomic<std::uint64_t>) == sizeof(std::uint64_t));
  auto* bytes = reinterpret_cast<std::byte*>(&count);
  if constexpr (std::endian::native == std::endian::big) bytes += sizeof(std::uint32_t);
  return reinterpret_cast<std::uint32_t*>(bytes);
}

}  // namespace

void SharedEvent::notify() {
  // Ordered after the caller's store (both sequentially consistent): a
  // sleeper that registered before that store is seen here, and one that
  // registers after it sees the store when it re-checks.
  if (sleepers.load(std::memory_order_seq_cst) == 0) return;
  count.fetch_add(1, std::memory_order_seq_cst);
#if defined(__linux__)
  // Not FUTEX_PRIVATE_FLAG: the sleepers are other processes.
  syscall(SYS_futex, low_half(count), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
#endif
}

void EventSleeper::sleep(std::chrono::microseconds limit) {
  if (!registered_) {
    event_.sleepers.fetch_add(1, std::memory_order_seq_cst);
    registered_ = true;
    seen_ = event_.count.load(std::memory_order_seq_cst);
    return;
  }
#if defined(__linux__)
  const long long micros = limit.count();
  const timespec relative{static_cast<time_t>(micros / 1000000),
                          static_cast<long>(micros % 1000000) * 1000};
  // Returns at once when the count moved since seen_ was read: an event
  // between the caller's last checks and this call is not lost.
  syscall(SYS_futex, low_half(event_.count), FUTEX_WAIT, static_cast<std::uint32_t>(seen_),
          &relative, nullptr, 0);
#else
  (void)limit;
  sched_yield();
#endif
  // Read before the caller's next checks: what they miss moves it again.
  seen_ = event_.count.load(std::memory_order_seq_cst);
}

void EventSleeper::stop() {
  if (!registered_) return;
  event_.sleepers.fetch_sub(1, std::memory_order_seq_cst);
  registered_ = false;
}

}  // namespace collective::internal
