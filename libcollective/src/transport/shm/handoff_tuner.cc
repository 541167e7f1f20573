#include "transport/shm/handoff_tuner.h"

#include <bit>
#include <utility>

#include "core/log.h"

namespace collective::internal {
namespace {

// One call in this many, on average, tries the other way: the machine's
// state lasts seconds to minutes, and a trial of the slower way costs up to
// 2-3x one call, so a few percent at worst.
constexpr std::uint64_t kTrialOneIn = 64;

// A class's first call runs on cold buffers (page faults, empty caches):
// trials and timing start from its call with this index.
constexpr std::uint64_t kFirstTimedCall = 1;
constexpr std::uint64_t kFirstTrialCall = 2;

int size_class(std::size_t bytes) {
  if (bytes == 0) return 0;
  return std::bit_width(bytes) - 1;
}

Handoff other(Handoff handoff) {
  return handoff == Handoff::kThroughCache ? Handoff::kThroughMemory : Handoff::kThroughCache;
}

std::uint8_t encode(Handoff handoff) {
  return static_cast<std::uint8_t>(1 + static_cast<int>(handoff));
}

// 0 (undecided) and anything unexpected read as through the cache.
Handoff decode(std::uint8_t value) {
  return value == 2 ? Handoff::kThroughMemory : Handoff::kThroughCache;
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// splitmix64's finalizer: consecutive call numbers give unrelated bits.
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

HandoffTuner::HandoffTuner(HandoffBoard& board, bool leader, std::optional<Handoff> forced,
                           Clock clock)
    : board_(board), leader_(leader), forced_(forced), clock_(std::move(clock)) {
  if (!clock_) clock_ = steady_seconds;
}

bool HandoffTuner::trial_offered(std::uint64_t call) { return splitmix64(call) % kTrialOneIn == 0; }

Handoff HandoffTuner::preferred(int size_class) const {
  const std::uint8_t own = board_.preferred[size_class].load(std::memory_order_relaxed);
  return decode(own != 0 ? own : board_.latest.load(std::memory_order_relaxed));
}

HandoffTuner::Choice HandoffTuner::choose(std::size_t bytes) {
  const int c = size_class(bytes);
  if (forced_) return Choice{*forced_, c, false, false, 0.0};
  const std::uint64_t index = classes_[c].calls++;
  if (trial_offered(calls_++)) trial_due_ = true;
  const bool trial = trial_due_ && index >= kFirstTrialCall;
  if (trial) trial_due_ = false;
  const bool timed = leader_ && index >= kFirstTimedCall && !after_trial_;
  after_trial_ = trial;
  const Handoff way = preferred(c);
  return Choice{trial ? other(way) : way, c, trial, timed, timed ? clock_() : 0.0};
}

void HandoffTuner::record(const Choice& choice, std::size_t bytes) {
  if (!choice.timed || bytes == 0) return;
  const double cost = (clock_() - choice.started) / static_cast<double>(bytes);
  ClassState& state = classes_[choice.size_class];
  double& measured = state.seconds_per_byte[static_cast<int>(choice.handoff)];
  // A trial replaces what is known of its way (old news by now); the way in
  // use is smoothed over its last calls against one-off delays.
  measured = (choice.trial || measured == 0) ? cost : (measured + cost) / 2;
  const double cache = state.seconds_per_byte[0];
  const double memory = state.seconds_per_byte[1];
  if (cache == 0 || memory == 0) return;
  const Handoff faster = memory < cache ? Handoff::kThroughMemory : Handoff::kThroughCache;
  board_.latest.store(encode(faster), std::memory_order_relaxed);
  std::atomic<std::uint8_t>& slot = board_.preferred[choice.size_class];
  if (slot.load(std::memory_order_relaxed) != encode(faster)) {
    slot.store(encode(faster), std::memory_order_relaxed);
    const std::size_t low = std::size_t{1} << choice.size_class;
    COLLECTIVE_LOG(kDebug, "shared_memory: calls of "
                               << low << " to " << 2 * low - 1 << " B now hand data over "
                               << handoff_name(faster) << " (cache " << cache * 1e9
                               << " ns/B, memory " << memory * 1e9 << " ns/B)");
  }
}

}  // namespace collective::internal
