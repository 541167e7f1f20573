#include "cross_rank_check/two_stage_check.h"

#include <string>
#include <utility>

#include "collective/errors.h"

namespace collective::internal {

TwoStageCheck::TwoStageCheck(const CallFingerprint& mine, std::span<const int> group, int held_back,
                             std::vector<int> outer_of_inner, const Request& request,
                             CommunicatorState& state)
    : mine_(mine),
      group_(group),
      held_back_(held_back),
      outer_of_inner_(std::move(outer_of_inner)),
      request_(request),
      state_(state),
      exchange_(mine, request, state) {
  for (int peer = 0; peer < state.size; ++peer) {
    if (peer != state.rank && peer != held_back) exchange_.send(peer);
  }
  exchange_.post_receives();
}

bool TwoStageCheck::group_agrees() {
  bool agree = true;
  for (const int peer : group_) {
    if (peer == state_.rank) continue;
    exchange_.wait_for(peer);
    agree = agree && agrees_with(exchange_.received(peer), peer, mine_);
  }
  return agree;
}

void TwoStageCheck::finish() {
  if (!held_back_sent_ && held_back_ != CarriedData::kNoPeer) exchange_.send(held_back_);
  held_back_sent_ = true;
  exchange_.wait_all();
  exchange_.raise_unless_all_agree();
}

std::span<const void* const> TwoStageCheck::carry(const CarriedData& carried) {
  const bool to_held_back = carried.to >= 0 &&
                            static_cast<std::size_t>(carried.to) < outer_of_inner_.size() &&
                            outer_of_inner_[static_cast<std::size_t>(carried.to)] == held_back_;
  if (!to_held_back || held_back_sent_) {
    // Its peer expects the data in the held-back message and nowhere else.
    throw CommunicationError(request_.label(), state_.rank,
                             "cross-rank check: the first message across nodes goes to a rank "
                             "other than the one whose fingerprint was held back for it");
  }
  exchange_.send(held_back_, carried.data, carried.bytes);
  held_back_sent_ = true;
  finish();
  thread_local std::vector<const void*> landed;
  landed.resize(outer_of_inner_.size());
  for (std::size_t q = 0; q < outer_of_inner_.size(); ++q) {
    const int outer = outer_of_inner_[q];
    landed[q] = outer == state_.rank ? carried.data : exchange_.carried_by(outer);
  }
  return {landed.data(), landed.size()};
}

}  // namespace collective::internal
