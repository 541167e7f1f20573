// The survivors of a communicator agree on which of its ranks failed, for
// Communicator::shrink: every survivor returns the same set, also when more
// ranks die while they agree.
//
// Each survivor sends its view (a flag per rank: failed or not) to every
// rank it believes alive, and sends it again whenever the view grows: by a
// peer's view, or by a death it sees itself (PeerLiveness, every 10 ms
// here). It decides once the latest view it holds from every rank it
// believes alive equals its own. A survivor that decided sent that view
// last, so no other survivor can decide a different one while it lives.
// Deaths are judged as every wait judges them (core/peer_liveness.h): on
// this host by /proc, elsewhere by the peer's liveness listener; a rank
// that can be judged neither way and dies during the agreement is waited
// for until the timeout, which raises TimeoutError naming it. A rank that
// dies after the survivors decided is a member of what they build next;
// that is the caller's to bound (Communicator::shrink watches the MPI call
// that builds it).
#pragma once

#include <string>
#include <vector>

#include "core/wait_subject.h"

namespace collective::internal {

// `state.comm` carries the views (tag kAgreementTag, each with `instance`,
// so that the views of an earlier agreement on the same communicator are
// told apart); `known` are failed ranks already known. Returns the agreed
// failed ranks, sorted. Bounded by COLLECTIVE_TIMEOUT.
std::vector<int> agree_on_failed_ranks(const WaitSubject& state, int size,
                                       const std::vector<int>& known, std::uint32_t instance,
                                       const char* operation);

}  // namespace collective::internal
