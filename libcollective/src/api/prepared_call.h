// A collective resolved once for a persistent plan (collective/plan.h):
// its request with the options applied and checked, the algorithm chosen
// and the fingerprint every start carries to the other ranks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/collective_algorithm.h"
#include "collective/options.h"
#include "core/communicator_state.h"
#include "core/request.h"
#include "cross_rank_check/call_fingerprint.h"

namespace collective::internal {

struct PreparedCall {
  Request request;  // options applied, memory kind resolved
  const CollectiveAlgorithm* algorithm = nullptr;
  CallFingerprint fingerprint;   // sequence and deadline filled in per start
  std::uint64_t created_as = 0;  // the creation's sequence number: the plan's identity
  // The v-forms' counts and displacements, the plan's own (request's spans
  // point here: the caller may reuse its arrays once the plan is made).
  std::vector<std::size_t> send_counts, send_displacements, recv_counts, recv_displacements;
};

// The plan's tag in every start's fingerprint: the caller's call_tag mixed
// with the plan's identity, so that two plans of the same shape differ.
std::uint64_t plan_fingerprint_tag(std::uint64_t call_tag, std::uint64_t created_as);

// Creation, a collective call in program order (it takes a sequence
// number): applies the options, checks the arguments, chooses the
// algorithm and checks across ranks that every rank prepares the same
// call; raises, on every rank, what the blocking call would (rejection,
// MismatchError). Touches no buffer. No `_async` call may be in flight.
PreparedCall prepare_call(CommunicatorState& state, Request request, const CommonOptions& options);

// One start, numbered `sequence` when the program issued it: the cached
// fingerprint (with this sequence) is checked across ranks, carried by the
// algorithm's first exchange where it can, then the algorithm runs.
void run_prepared_call(CommunicatorState& state, const PreparedCall& prepared,
                       std::uint64_t sequence);

}  // namespace collective::internal
