// The verdict of the cross-rank check (cross_rank_check.h) once every
// rank's fingerprint is known, whichever way they were exchanged (over MPI:
// direct_check_exchange.h and the dissemination all-gather; through the
// node's segment: node_board_check.h).
#pragma once

#include <span>

#include "core/communicator_state.h"
#include "core/request.h"
#include "cross_rank_check/call_fingerprint.h"

namespace collective::internal {

// Raises when the ranks' fingerprints `all` (rank r's at all[r]) do not
// agree, as check_across_ranks describes. Every rank calls it with the
// same fingerprints: when only the v-forms' counts disagree, all of them
// exchange the counts (vector_counts_check.h) to name the disagreement.
void raise_unless_agreed(std::span<const CallFingerprint> all, const CallFingerprint& mine,
                         const Request& request, CommunicatorState& state);

}  // namespace collective::internal
