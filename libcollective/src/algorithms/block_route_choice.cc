#include "algorithms/block_route_choice.h"

#include "core/env_params.h"

namespace collective::internal {
namespace {

struct BlockRouteResource final : AlgorithmResources {
  BlockRouteResource(bool leader, std::optional<BlockRoute> forced) : choice(leader, forced) {}
  BlockRouteChoice choice;
};

// Whether the route of `kind` is measured. A scatter's or a broadcast's
// only sender is the root: through the slots it copies every block once
// more, alone, before the receivers can read it, where by the kernel's
// copy they read straight from its buffer at once (measured at 2 ranks,
// 4 MiB: 157 us against 235 through the slots). Many senders (gathers,
// all-to-all) stage their blocks at the same time, and the reader's copies
// out of the slots are plain memcpys.
bool tuned(CollectiveKind kind) {
  return kind != CollectiveKind::kScatter && kind != CollectiveKind::kScatterV &&
         kind != CollectiveKind::kBroadcast;
}

}  // namespace

BlockRouteChoice& block_route_choice(CommunicatorState& state, bool leader) {
  return state.resources
      .get_or_make<BlockRouteResource>([&] {
        return std::make_unique<BlockRouteResource>(leader, env_params().shm_block_route);
      })
      .choice;
}

BlockRouteChoice::BlockRouteChoice(bool leader, std::optional<BlockRoute> forced)
    : leader_(leader), forced_(forced) {}

BlockRoute BlockRouteChoice::propose(CollectiveKind kind, std::size_t bytes) {
  pending_.reset();
  if (forced_) return *forced_;
  if (!leader_ || bytes < kCrossMemoryAttachBytes || !tuned(kind)) return BlockRoute::kKernelCopy;
  const auto index = static_cast<std::size_t>(kind);
  std::unique_ptr<KindTuner>& slot = tuners_[index];
  if (!slot) {
    slot = std::make_unique<KindTuner>();
    slot->tuner.emplace(slot->board, true, std::nullopt,
                        "shared_memory: exchanges whose blocks are", "go", true);
  }
  const BlockRouteTuner::Choice choice = slot->tuner->choose(bytes);
  // This call's number if its blocks take the route (the agreed state
  // decides that after the hand-off).
  pending_ = Pending{routed_ + 1, index, bytes, choice, false};
  return choice.way;
}

void BlockRouteChoice::learn(std::uint64_t call, double seconds) {
  if (!awaiting_ || awaiting_->call != call) return;
  KindTuner& slot = *tuners_[awaiting_->tuner];
  if (awaiting_->cold) {
    if (awaiting_->choice.trial) slot.tuner->retry_soon();
    awaiting_.reset();
    return;
  }
  slot.tuner->record_cost(awaiting_->choice, seconds / static_cast<double>(awaiting_->bytes));
  awaiting_.reset();
}

void BlockRouteChoice::begin_routed() {
  ++routed_;
  // The leader's choice for this call waits for the reports of its time;
  // a routed call it did not choose for (its own blocks were small) has
  // nothing to learn.
  awaiting_.reset();
  if (pending_ && pending_->call == routed_) {
    awaiting_ = pending_;
    bool& taken = taken_[static_cast<int>(awaiting_->choice.way)];
    awaiting_->cold = !taken;
    taken = true;
  }
  pending_.reset();
}

void BlockRouteChoice::exchange_started() { started_ = steady_clock_seconds(); }

void BlockRouteChoice::end_routed() { last_ = Report{routed_, steady_clock_seconds() - started_}; }

}  // namespace collective::internal
