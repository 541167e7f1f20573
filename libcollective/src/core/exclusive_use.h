// A communicator serves one thread at a time (communicator.h). Two threads
// calling into one communicator at once would mix their messages and give
// wrong results with no error, so every call claims the communicator for
// its duration, and a call that finds it claimed raises
// InvalidArgumentError naming both calls before touching anything: no
// sequence number is used and nothing is poisoned.
//
// Cost: one compare-and-swap and one store per call on a cache line that
// only this communicator's calls touch.
#pragma once

#include <atomic>
#include <cstdint>

#include "collective/algorithm.h"

namespace collective::internal {

struct CommunicatorState;

class ExclusiveUse {
 public:
  // A collective of `kind`; started() then records its sequence number, so
  // that a colliding thread can name it.
  ExclusiveUse(CommunicatorState& state, CollectiveKind kind);
  // The communicator's other operations that communicate or free it.
  enum class Operation : std::uint8_t { kSplit, kShrink, kFree, kSend, kRecv };
  ExclusiveUse(CommunicatorState& state, Operation operation);
  ~ExclusiveUse();
  void started(std::uint64_t sequence);
  ExclusiveUse(const ExclusiveUse&) = delete;
  ExclusiveUse& operator=(const ExclusiveUse&) = delete;

 private:
  // CommunicatorState::in_use: 0 when free, else the encoded holder.
  std::atomic<std::uint64_t>& owner_;
  CollectiveKind kind_ = CollectiveKind::kAllReduce;
};

}  // namespace collective::internal
