#include "algorithms/handoff_tuner.h"

#include <bit>
#include <utility>

#include "core/log.h"

namespace collective::internal {
namespace {

// After the first trials, one call in this many tries the other way: the
// machine's state lasts seconds to minutes, and a trial of the slower way
// costs up to 3x one call, so about 3% at worst.
constexpr std::uint64_t kTrialPeriod = 64;

int size_class(std::size_t bytes) {
  if (bytes == 0) return 0;
  return std::bit_width(bytes) - 1;
}

Handoff other(Handoff handoff) {
  return handoff == Handoff::kThroughCache ? Handoff::kThroughMemory : Handoff::kThroughCache;
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const char* handoff_name(Handoff handoff) {
  return handoff == Handoff::kThroughCache ? "through the cache" : "through memory";
}

HandoffTuner::HandoffTuner(HandoffBoard& board, bool leader, std::optional<Handoff> forced,
                           Clock clock)
    : board_(board), leader_(leader), forced_(forced), clock_(std::move(clock)) {
  if (!clock_) clock_ = steady_seconds;
}

bool HandoffTuner::is_trial(std::uint64_t index) {
  // 1, 3, 7, 15, 31, 63 (a new class learns fast), then every 64th.
  if (index < kTrialPeriod) return std::has_single_bit(index + 1) && index > 0;
  return index % kTrialPeriod == kTrialPeriod - 1;
}

HandoffTuner::Choice HandoffTuner::choose(std::size_t bytes) {
  const int c = size_class(bytes);
  if (forced_) return Choice{*forced_, c, false, 0.0};
  ClassState& state = classes_[c];
  const bool trial = is_trial(state.calls++);
  const auto preferred = static_cast<Handoff>(
      board_.preferred[c].load(std::memory_order_relaxed) & 1u);
  return Choice{trial ? other(preferred) : preferred, c, trial, leader_ ? clock_() : 0.0};
}

void HandoffTuner::record(const Choice& choice, std::size_t bytes) {
  if (forced_ || !leader_ || bytes == 0) return;
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
  std::atomic<std::uint8_t>& slot = board_.preferred[choice.size_class];
  if (static_cast<Handoff>(slot.load(std::memory_order_relaxed)) != faster) {
    slot.store(static_cast<std::uint8_t>(faster), std::memory_order_relaxed);
    const std::size_t low = std::size_t{1} << choice.size_class;
    COLLECTIVE_LOG(kDebug, "shared_memory: calls of " << low << " to " << 2 * low - 1
                                                      << " B now hand data over "
                                                      << handoff_name(faster) << " (cache "
                                                      << cache * 1e9 << " ns/B, memory "
                                                      << memory * 1e9 << " ns/B)");
  }
}

}  // namespace collective::internal
