// Choosing between two ways of doing the same work by timing both, per
// size class, on a machine whose answer changes while a job runs. Two
// choices use it:
//
// How the shared-memory algorithms hand a slot from one rank to another
// (core/handoff.h). Through the cache: the writer fills a staging or
// result slot with plain stores and the reader pulls the lines from the
// writer's cache, the cheapest handoff when the two cores share a
// last-level cache. Through memory: non-temporal stores, the lines go to
// memory, and the reader streams them from there with full prefetching,
// cheaper when the cores do not share a cache (two sockets; a VM whose
// vCPUs the host places on different L3 complexes). On the development VM
// the answer changes from minute to minute, by 2-3x either way
// (docs/performance.md), so it is measured, not assumed. The way only
// decides which stores write the slots, never what is computed: ranks that
// momentarily use different ways (one read a newer preference) are still
// correct.
//
// How the block exchanges move blocks of 64 KiB and more (core/block_route.h):
// the kernel's single copy from the peer's buffer, or the rounds through the
// staging slots. The kernel's copy pins pages and writes the destination
// without streaming stores; the slots' two copies go through the cache
// between cores. Which is faster depends on the same placement of the vCPUs
// (measured 0.3x to 2x either way between runs on the development VM). All
// ranks must take the same route: the node's first rank decides and its
// choice travels in the exchange's first hand-off (shared_memory_exchange.cc).
//
// Choosing: the node's first local rank (the leader) times the calls, by
// size class (powers of two), and publishes the faster way per class in a
// board; every rank reads it when a call starts. A class not decided yet
// takes the way decided last for any class, since a change of the machine
// moves every size alike (so a sweep over sizes need not learn each one).
// Now and then a call tries the other way, so that a change is noticed:
// the first chance (a class's third call; its first is cold and not timed),
// then one call in 64 on average, at pseudo-random calls (so no pattern of
// alternating sizes always hands the trials to the same one). Every rank
// counts the same calls, so all try on the same ones. The call after a
// trial is not timed (the trial left the caches colder).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

#include "core/block_route.h"
#include "core/handoff.h"

namespace collective::internal {

// The steady clock in seconds since an arbitrary origin: the tuners' clock.
double steady_clock_seconds();

// Size classes: class c holds calls of [2^c, 2^(c+1)) bytes.
inline constexpr int kTunedSizeClasses = 64;

// The leader's published preferences. Zeroed memory means nothing decided
// (way 0). The handoff's lives in the node segment's header page.
struct TwoWayBoard {
  // Per size class: 0 undecided, else 1 + the way.
  std::atomic<std::uint8_t> preferred[kTunedSizeClasses];
  // The way decided last, for any class (same encoding).
  std::atomic<std::uint8_t> latest;
};

// `Way` is an enum of two values, 0 (the default until measured) and 1,
// with a `way_name(Way)` for the log.
template <typename Way>
class TwoWayTuner {
 public:
  // Seconds since an arbitrary origin; the steady clock unless a test
  // drives the tuner.
  using Clock = std::function<double()>;

  // `leader`: this rank measures and publishes. `forced`: always this way,
  // nothing measured. `subject` names what is chosen in the log line
  // ("shared_memory: calls of" ... " now hand data over"). `steady`: each
  // way's cost is the median of its last calls; the class leaves the way it
  // takes only for one measured clearly faster (kClearGain) by two trials
  // in a row (the slower of the two), since single calls of a noisy
  // machine decide otherwise;
  // and a trial that finds the other way still much slower (1.5x) makes
  // the class skip twice as many of its next offered trials (up to
  // kMostTrialsSkipped), so that a way that costs several times the other
  // is tried rarely; a trial that does not, resets that. Only a tuner whose
  // followers need not try on the same calls as the leader may be steady.
  TwoWayTuner(TwoWayBoard& board, bool leader, std::optional<Way> forced, const char* subject,
              const char* verb, bool steady = false, Clock clock = {});

  static constexpr double kClearGain = 1.25;
  static constexpr unsigned kSteadySamples = 5;
  static constexpr unsigned kMostTrialsSkipped = 15;

  struct Choice {
    Way way;
    int size_class;
    bool trial;      // the way not preferred, tried to notice a change
    bool timed;      // the leader records this call
    double started;  // clock at the choice
  };

  // The way for a call of `bytes`, which starts now.
  Choice choose(std::size_t bytes);
  // The call chosen for has completed (a call that failed is not
  // recorded): its time on the leader's clock.
  void record(const Choice& choice, std::size_t bytes);
  // The same with the call's cost measured elsewhere (the slowest rank's).
  void record_cost(const Choice& choice, double seconds_per_byte);

  // The next call that may try the other way does (a trial's time was
  // not representative and is dropped: it made the slots' pages).
  void retry_soon() { trial_due_ = true; }

  // Does the pseudo-random schedule offer a trial at the node's call
  // number `call` (0, 1, ...)? About one call in 64.
  static bool trial_offered(std::uint64_t call);

 private:
  struct ClassState {
    std::uint64_t calls = 0;
    double seconds_per_byte[2] = {0, 0};  // 0: not measured yet
    // steady: each way's last samples (a trial's alone), whose median is
    // its cost, so that one delayed call does not move the choice.
    double recent[2][kSteadySamples] = {};
    unsigned held[2] = {0, 0};
    bool confirming = false;        // steady: a trial won; the next one confirms or not
    unsigned skip_after_trial = 0;  // steady: the offered trials the last trial skips
    unsigned trials_to_skip = 0;    // of those, still to skip
  };
  Way preferred(int size_class) const;
  // steady: the median of the way's last samples with `sample` added.
  static double steady_cost(ClassState& state, int way, bool trial, double sample);
  // steady: the way to take after `choice`'s call was recorded.
  Way steady_choice(ClassState& state, const Choice& choice);
  TwoWayBoard& board_;
  bool leader_;
  std::optional<Way> forced_;
  const char* subject_;
  const char* verb_;
  bool steady_;
  Clock clock_;
  std::uint64_t calls_ = 0;   // every chosen call of this rank
  bool trial_due_ = true;     // offered, not yet taken (the class was too new)
  bool after_trial_ = false;  // the previous call was a trial
  ClassState classes_[kTunedSizeClasses];
};

using HandoffBoard = TwoWayBoard;
using HandoffTuner = TwoWayTuner<Handoff>;
using BlockRouteTuner = TwoWayTuner<BlockRoute>;

extern template class TwoWayTuner<Handoff>;
extern template class TwoWayTuner<BlockRoute>;

}  // namespace collective::internal
