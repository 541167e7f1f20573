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
// Choosing: the node's first local rank times every call, by size class
// (powers of two), and publishes the faster way per class in the segment's
// board; every rank reads the board when a call starts. The same calls of a
// class on every rank (calls 1, 3, 7, 15, 31, 63, then every 64th) try the
// other way, so a change of the machine is noticed: a few percent of the
// calls, at most, run the slower way.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

namespace collective::internal {

enum class Handoff : std::uint8_t { kThroughCache = 0, kThroughMemory = 1 };

const char* handoff_name(Handoff handoff);

// Size classes: class c holds calls of [2^c, 2^(c+1)) bytes.
inline constexpr int kHandoffClasses = 64;

// The leader's published preference per size class. Lives in shared memory;
// zeroed memory means "through the cache" everywhere.
struct HandoffBoard {
  std::atomic<std::uint8_t> preferred[kHandoffClasses];
};

class HandoffTuner {
 public:
  // Seconds since an arbitrary origin; the steady clock unless a test
  // drives the tuner.
  using Clock = std::function<double()>;

  // `leader`: this rank measures and publishes. `forced`: always this way
  // (COLLECTIVE_SHM_HANDOFF), nothing measured.
  HandoffTuner(HandoffBoard& board, bool leader, std::optional<Handoff> forced,
               Clock clock = {});

  struct Choice {
    Handoff handoff;
    int size_class;
    bool trial;      // the way not preferred, tried to notice a change
    double started;  // clock at the choice
  };

  // The way for a call of `bytes`, which starts now.
  Choice choose(std::size_t bytes);
  // The call chosen for has completed (a call that failed is not recorded).
  void record(const Choice& choice, std::size_t bytes);

  // Is call `index` of a size class (0, 1, ...) a trial of the other way?
  static bool is_trial(std::uint64_t index);

 private:
  struct ClassState {
    std::uint64_t calls = 0;
    double seconds_per_byte[2] = {0, 0};  // 0: not measured yet
  };
  HandoffBoard& board_;
  bool leader_;
  std::optional<Handoff> forced_;
  Clock clock_;
  ClassState classes_[kHandoffClasses];
};

}  // namespace collective::internal
