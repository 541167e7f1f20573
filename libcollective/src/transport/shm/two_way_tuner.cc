#include "transport/shm/two_way_tuner.h"

#include <algorithm>
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

template <typename Way>
Way other(Way way) {
  return static_cast<int>(way) == 0 ? static_cast<Way>(1) : static_cast<Way>(0);
}

template <typename Way>
std::uint8_t encode(Way way) {
  return static_cast<std::uint8_t>(1 + static_cast<int>(way));
}

// 0 (undecided) and anything unexpected read as way 0.
template <typename Way>
Way decode(std::uint8_t value) {
  return static_cast<Way>(value == 2 ? 1 : 0);
}

// splitmix64's finalizer: consecutive call numbers give unrelated bits.
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

double steady_clock_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <typename Way>
double TwoWayTuner<Way>::steady_cost(ClassState& state, int way, bool trial, double sample) {
  unsigned& held = state.held[way];
  double* recent = state.recent[way];
  if (trial) held = 0;  // old news: the trial's sample alone
  if (held == kSteadySamples) std::copy(recent + 1, recent + held--, recent);
  recent[held++] = sample;
  // The median of at most five: an insertion sort of a copy.
  double sorted[kSteadySamples];
  for (unsigned i = 0; i < held; ++i) {
    unsigned j = i;
    for (; j > 0 && sorted[j - 1] > recent[i]; --j) sorted[j] = sorted[j - 1];
    sorted[j] = recent[i];
  }
  return sorted[held / 2];
}

template <typename Way>
TwoWayTuner<Way>::TwoWayTuner(TwoWayBoard& board, bool leader, std::optional<Way> forced,
                              const char* subject, const char* verb, bool steady, Clock clock)
    : board_(board),
      leader_(leader),
      forced_(forced),
      subject_(subject),
      verb_(verb),
      steady_(steady),
      clock_(std::move(clock)) {
  if (!clock_) clock_ = steady_clock_seconds;
}

template <typename Way>
bool TwoWayTuner<Way>::trial_offered(std::uint64_t call) {
  return splitmix64(call) % kTrialOneIn == 0;
}

template <typename Way>
Way TwoWayTuner<Way>::preferred(int size_class) const {
  const std::uint8_t own = board_.preferred[size_class].load(std::memory_order_relaxed);
  return decode<Way>(own != 0 ? own : board_.latest.load(std::memory_order_relaxed));
}

template <typename Way>
typename TwoWayTuner<Way>::Choice TwoWayTuner<Way>::choose(std::size_t bytes) {
  const int c = size_class(bytes);
  if (forced_) return Choice{*forced_, c, false, false, 0.0};
  ClassState& state = classes_[c];
  const std::uint64_t index = state.calls++;
  if (trial_offered(calls_++)) trial_due_ = true;
  bool trial = trial_due_ && index >= kFirstTrialCall;
  if (trial) trial_due_ = false;
  if (trial && state.trials_to_skip > 0) {
    --state.trials_to_skip;
    trial = false;
  }
  const bool timed = leader_ && index >= kFirstTimedCall && !after_trial_;
  after_trial_ = trial;
  const Way way = preferred(c);
  return Choice{trial ? other(way) : way, c, trial, timed, timed ? clock_() : 0.0};
}

template <typename Way>
void TwoWayTuner<Way>::record(const Choice& choice, std::size_t bytes) {
  if (!choice.timed || bytes == 0) return;
  record_cost(choice, (clock_() - choice.started) / static_cast<double>(bytes));
}

template <typename Way>
void TwoWayTuner<Way>::record_cost(const Choice& choice, double seconds_per_byte) {
  if (!choice.timed) return;
  ClassState& state = classes_[choice.size_class];
  const int way = static_cast<int>(choice.way);
  double& measured = state.seconds_per_byte[way];
  if (steady_) {
    // A confirming trial's sample joins the first trial's.
    measured = steady_cost(state, way, choice.trial && !state.confirming, seconds_per_byte);
  } else {
    // A trial replaces what is known of its way (old news by now); the way
    // in use is smoothed over its last calls against one-off delays.
    measured =
        (choice.trial || measured == 0) ? seconds_per_byte : (measured + seconds_per_byte) / 2;
  }
  const double first = state.seconds_per_byte[0];
  const double second = state.seconds_per_byte[1];
  if (first == 0 || second == 0) return;
  const Way faster =
      steady_ ? steady_choice(state, choice) : static_cast<Way>(second < first ? 1 : 0);
  board_.latest.store(encode(faster), std::memory_order_relaxed);
  std::atomic<std::uint8_t>& slot = board_.preferred[choice.size_class];
  if (slot.load(std::memory_order_relaxed) != encode(faster)) {
    slot.store(encode(faster), std::memory_order_relaxed);
    const std::size_t low = std::size_t{1} << choice.size_class;
    COLLECTIVE_LOG(kDebug, subject_ << " " << low << " to " << 2 * low - 1 << " B now " << verb_
                                    << " " << way_name(faster) << " (" << way_name(Way{0}) << " "
                                    << first * 1e9 << " ns/B, " << way_name(static_cast<Way>(1))
                                    << " " << second * 1e9 << " ns/B)");
  }
}

template <typename Way>
Way TwoWayTuner<Way>::steady_choice(ClassState& state, const Choice& choice) {
  const Way now = preferred(choice.size_class);
  const double kept = state.seconds_per_byte[static_cast<int>(now)];
  const double other_way = state.seconds_per_byte[static_cast<int>(other(now))];
  const bool other_wins = other_way * kClearGain < kept;
  if (!choice.trial) return other_wins ? other(now) : now;
  // Back off from trying a way much slower than the kept one.
  const double tried = state.seconds_per_byte[static_cast<int>(choice.way)];
  const double untried = state.seconds_per_byte[static_cast<int>(other(choice.way))];
  state.skip_after_trial =
      tried >= 1.5 * untried ? std::min(2 * state.skip_after_trial + 1, kMostTrialsSkipped) : 0;
  state.trials_to_skip = state.skip_after_trial;
  // One winning trial is tried again at the next chance; the way changes
  // only if the slower of the two still wins.
  if (other_wins && !state.confirming) {
    state.confirming = true;
    retry_soon();
    return now;
  }
  state.confirming = false;
  return other_wins ? other(now) : now;
}

template class TwoWayTuner<Handoff>;
template class TwoWayTuner<BlockRoute>;

}  // namespace collective::internal
