#include "cross_rank_check/check_verdict.h"

#include <string>

#include "collective/errors.h"
#include "cross_rank_check/vector_counts_check.h"

namespace collective::internal {

void raise_unless_agreed(std::span<const CallFingerprint> all, const CallFingerprint& mine,
                         const Request& request, CommunicatorState& state) {
  // A rank number that is not the sender's would mean a message from some
  // other exchange matched: refuse rather than judge garbage.
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].rank != static_cast<int>(r) || all[r].sequence != request.sequence) {
      throw CommunicationError(request.label(), state.rank,
                               "cross-rank check: the fingerprint from rank " + std::to_string(r) +
                                   " is for rank " + std::to_string(all[r].rank) + " call #" +
                                   std::to_string(all[r].sequence) +
                                   " (messages of different calls crossed)");
    }
  }
  const Verdict verdict = judge(all);
  switch (verdict.kind) {
    case Verdict::kAgree: return;
    case Verdict::kRejected:
      if (mine.rejected()) return;  // the caller raises this rank's own error
      if (verdict.unsupported) throw UnsupportedError(request.label(), state.rank, verdict.cause);
      throw InvalidArgumentError(request.label(), state.rank, verdict.cause);
    case Verdict::kMismatch: throw MismatchError(request.label(), state.rank, verdict.cause);
    case Verdict::kCountsDisagree:
      // Every rank reached this verdict from the same fingerprints, so all
      // take part in the exchange that names the disagreement.
      throw MismatchError(request.label(), state.rank, describe_count_disagreement(request, state));
  }
}

}  // namespace collective::internal
