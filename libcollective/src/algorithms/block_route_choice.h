// Which route a block exchange's blocks of kCrossMemoryAttachBytes and more
// take (core/block_route.h): the kernel's single copy or the rounds
// through the staging slots. Neither wins everywhere: on the development
// VM the slots were 1.5-2x faster at 1-16 MiB in some runs and 3-6x slower
// in others, as the host placed the vCPUs (docs/performance_history.md,
// "Blocks of 64 KiB and more: the kernel's copy or the slots").
//
// Every rank must take the same route, so the node's first local rank (the
// leader) decides, by kind and size class, with a TwoWayTuner, and puts
// its choice in its header of the exchange's first hand-off, which every
// rank reads anyway. The cost of a route is the slowest rank's time: each
// rank times its routed calls (from their first hand-off: what the
// slots' rounds leave to the next call is waited for there) and reports
// the last one in its header of
// the next exchange, where the leader reads them all. A report that names
// another call than the one the leader chose for (a rank failed in
// between) is dropped.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "collective/algorithm.h"
#include "core/block_route.h"
#include "core/communicator_state.h"
#include "core/resource_slots.h"
#include "transport/shm/two_way_tuner.h"

namespace collective::internal {

class BlockRouteChoice {
 public:
  // `leader`: this rank chooses and measures. `forced`: always this route.
  BlockRouteChoice(bool leader, std::optional<BlockRoute> forced);

  // A rank's report of its last routed call, in its header.
  struct Report {
    std::uint64_t call = 0;  // the routed call's number, from 1; 0: none yet
    double seconds = 0;      // its time on this rank
  };

  // Leader, at every exchange's first hand-off: the route for this call of
  // `kind`, whose largest block on the leader's side (sent or received) is
  // `bytes`; the kernel's copy, unmeasured, where that is too small to
  // choose by, and always for a scatter(_v) or broadcast (one sender).
  BlockRoute propose(CollectiveKind kind, std::size_t bytes);
  // Leader: the reports of that hand-off agreed on `call` (every rank
  // named it) and the slowest took `seconds`: the cost of the route that
  // call took, when it is the one proposed for.
  void learn(std::uint64_t call, double seconds);

  // Every rank: an exchange's first hand-off starts (a routed call's time
  // runs from there: the wait for the peers' headers holds what the previous
  // call left to finish, the slots' last rounds); a routed call (one whose
  // blocks took the route) starts and has completed. A call that failed is
  // not ended.
  void exchange_started();
  void begin_routed();
  void end_routed();
  Report report() const { return last_; }

 private:
  struct Pending {
    std::uint64_t call = 0;
    std::size_t tuner = 0;
    std::size_t bytes = 0;
    BlockRouteTuner::Choice choice{};
    // The route's first call on this communicator: it faults in the
    // slots' pages (or the segment is made again larger), so its time
    // says nothing of the next calls' and is not learned.
    bool cold = false;
  };
  bool leader_;
  std::optional<BlockRoute> forced_;
  // One tuner per kind (a gather and an all_to_all of the same size do not
  // move the same bytes), made at its first call; each with its own board.
  struct KindTuner {
    TwoWayBoard board{};
    std::optional<BlockRouteTuner> tuner;
  };
  std::array<std::unique_ptr<KindTuner>, kNumCollectiveKinds> tuners_;
  std::optional<Pending> pending_;   // chosen for the call in its first hand-off
  std::optional<Pending> awaiting_;  // the last routed call's, until its reports come
  bool taken_[2] = {false, false};   // each route, by a routed call the leader chose for
  std::uint64_t routed_ = 0;
  double started_ = 0;
  Report last_;
};

// The communicator's choice, in its resource slots; `leader`: this rank is
// the node's first local rank.
BlockRouteChoice& block_route_choice(CommunicatorState& state, bool leader);

}  // namespace collective::internal
