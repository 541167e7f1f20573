// The cross-rank check of the v-forms' counts (cross_rank_check.h), at no
// message of its own while the counts agree.
//
// all_to_all_v, gather_v and scatter_v: the count rank i sends rank j must
// be the count j expects from i. Each rank folds its side of every pair it
// is part of into the fingerprint's count field: +h(i, j, what i sends j)
// as sender, -h(i, j, what j expects from i) as receiver, where h is a
// bijection of the count for each ordered pair. The fields of all ranks sum
// to zero when every pair agrees; one disagreeing pair always leaves a
// non-zero sum, so every rank sees it from the fingerprints it already
// receives (several disagreeing pairs cancel only by a 2^-64 accident).
//
// all_gather_v and reduce_scatter_v: recv_counts must be alike on every
// rank; the fingerprint carries a hash of them.
//
// Once the fingerprints show a disagreement, every rank knows it at the
// same step, so all of them can afford one more exchange, on this error
// path only, to learn which pair or entry differs and name it with both
// values.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "collective/in_tree/collectives.h"
#include "core/communicator_state.h"
#include "core/request.h"

namespace collective::internal {

// all_to_all_v, gather_v, scatter_v: counts that pair a sender with a receiver.
bool has_pair_counts(CollectiveKind kind);
// all_gather_v, reduce_scatter_v: recv_counts alike on every rank.
bool has_agreed_recv_counts(CollectiveKind kind);

// This rank's term of the pair sum (has_pair_counts) for a valid request.
std::uint64_t pair_count_term(const Request& request, int rank);

// FNV-1a over recv_counts (has_agreed_recv_counts).
std::uint64_t hash_recv_counts(std::span<const std::size_t> recv_counts);

// Called on every rank once the fingerprints showed that the counts
// disagree and nothing else does: exchanges what is needed to find the
// first disagreeing pair (by sender, then receiver) or recv_counts entry
// (the lowest rank that differs from rank 0, its first differing index),
// and returns the cause every rank raises, naming both values.
std::string describe_count_disagreement(const Request& request, CommunicatorState& state);

}  // namespace collective::internal
