// The cross-rank check of an algorithm whose first step stays inside the
// node (hierarchical all_reduce across nodes), made without a round of its
// own. It is the direct exchange (direct_check_exchange.h) in two stages:
//  1. every rank sends its fingerprint to every other at once, except the
//     one message that goes with the first data to leave the node; the
//     ranks of a node learn from each other's fingerprints (messages inside
//     the host) that they make the same call, and only then run the node
//     step, which writes nothing of the caller's;
//  2. the first message across nodes carries the held-back fingerprint
//     (CheckRelay::carry), every rank waits for all fingerprints and
//     reaches the same verdict as check_across_ranks, before anything of the
//     caller's is written.
// A node whose ranks disagree skips its node step and finishes the check at
// once: every rank still sends every fingerprint, so every rank raises.
#pragma once

#include <span>
#include <vector>

#include "core/communicator_state.h"
#include "core/request.h"
#include "cross_rank_check/cross_rank_check.h"
#include "cross_rank_check/direct_check_exchange.h"

namespace collective::internal {

class TwoStageCheck final : public CheckRelay {
 public:
  // `group`: the ranks heard first (this rank's node, this rank among them).
  // `held_back`: the rank whose fingerprint waits for carry() or finish(),
  // or CarriedData::kNoPeer. `outer_of_inner`: the rank here of each rank of
  // the inner communicator that carry() is called for. `mine` must outlive
  // the check.
  TwoStageCheck(const CallFingerprint& mine, std::span<const int> group, int held_back,
                std::vector<int> outer_of_inner, const Request& request, CommunicatorState& state);

  // Waits for the group's fingerprints: whether every rank of the group
  // makes this call. When not, only finish() may follow (it raises).
  bool group_agrees();

  // Sends the held-back fingerprint (if carry() did not), waits for every
  // fingerprint and raises unless all agree.
  void finish();

  // CheckRelay: sends the held-back fingerprint with `carried`, whose `to`
  // must be the inner rank of `held_back`, then finishes.
  std::span<const void* const> carry(const CarriedData& carried) override;

 private:
  const CallFingerprint& mine_;
  std::span<const int> group_;
  int held_back_;
  std::vector<int> outer_of_inner_;
  const Request& request_;
  CommunicatorState& state_;
  DirectCheckExchange exchange_;
  bool held_back_sent_ = false;
};

}  // namespace collective::internal
