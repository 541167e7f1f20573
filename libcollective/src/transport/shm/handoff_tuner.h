// How the shared-memory algorithms hand data from one rank to another
// through the node segment, and which of the two ways is faster on this
// machine at the moment.
//
// Through the cache: the writer fills a staging or result slot with plain
// stores and the reader pulls the lines from the writer's cache. The
// cheapest handoff when the two cores share a last-level cache.
// Through memory: the writer fills the slot with non-temporal stores, the
// lines go to memory, and the reader streams them from there with full
// prefetching. The cheaper handoff when the cores do not share a cache (two
// sockets; a VM whose vCPUs the host places on different L3 complexes),
// where every line pulled from the other cache is a slow transfer of its
// own. On the development VM the answer changes from minute to minute, by
// 2-3x either way (docs/performance.md), so it is measured, not assumed.
//
// The way only decides which stores write the slots, never what is
// computed: results are bitwise the same either way, and ranks that
// momentarily use different ways (one read a newer preference than
// another) are still correct.
//
// Choosing: the node's first local rank (the leader) times the calls, by
// size class (powers of two), and publishes the faster way per class in
// the segment's header page; every rank reads it when a call starts. A
// class not decided yet takes the way decided last for any class, since a
// change of the machine moves every size alike (so a sweep over sizes need
// not learn each one). Now and then a call tries the other way, so that a
// change is noticed: the first chance (a class's third call; its first is
// cold and not timed), then one call in 64 on average, at pseudo-random
// calls (so no pattern of alternating sizes always hands the trials to the
// same one). Every rank counts the same calls, so all try on the same ones.
// The call after a trial is not timed (the trial left the caches colder).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

#include "core/handoff.h"

namespace collective::internal {

// Size classes: class c holds calls of [2^c, 2^(c+1)) bytes.
inline constexpr int kHandoffClasses = 64;

// The leader's published preferences. Lives in shared memory; zeroed
// memory means nothing decided (through the cache).
struct HandoffBoard {
  // Per size class: 0 undecided, else 1 + Handoff.
  std::atomic<std::uint8_t> preferred[kHandoffClasses];
  // The way decided last, for any class (same encoding).
  std::atomic<std::uint8_t> latest;
};

class HandoffTuner {
 public:
  // Seconds since an arbitrary origin; the steady clock unless a test
  // drives the tuner.
  using Clock = std::function<double()>;

  // `leader`: this rank measures and publishes. `forced`: always this way
  // (COLLECTIVE_SHM_HANDOFF), nothing measured.
  HandoffTuner(HandoffBoard& board, bool leader, std::optional<Handoff> forced, Clock clock = {});

  struct Choice {
    Handoff handoff;
    int size_class;
    bool trial;      // the way not preferred, tried to notice a change
    bool timed;      // the leader records this call
    double started;  // clock at the choice
  };

  // The way for a call of `bytes`, which starts now.
  Choice choose(std::size_t bytes);
  // The call chosen for has completed (a call that failed is not recorded).
  void record(const Choice& choice, std::size_t bytes);

  // Does the pseudo-random schedule offer a trial at the node's call
  // number `call` (0, 1, ...)? About one call in 64.
  static bool trial_offered(std::uint64_t call);

 private:
  struct ClassState {
    std::uint64_t calls = 0;
    double seconds_per_byte[2] = {0, 0};  // 0: not measured yet
  };
  Handoff preferred(int size_class) const;
  HandoffBoard& board_;
  bool leader_;
  std::optional<Handoff> forced_;
  Clock clock_;
  std::uint64_t calls_ = 0;   // every chosen call of this rank
  bool trial_due_ = true;     // offered, not yet taken (the class was too new)
  bool after_trial_ = false;  // the previous call was a trial
  ClassState classes_[kHandoffClasses];
};

}  // namespace collective::internal
