// What replica_context.cc defines for the rest of core beside the public
// ReplicaContext (collective/distribute/replica_context.h).
#pragma once

#include "collective/distribute/replica_context.h"

namespace collective::distribute::detail {

struct StrategyImpl;

// InvalidArgumentError naming merge_call and both sizes when merge_fn's
// PerReplica result does not hold one value per local replica.
void check_merge_result(const StrategyImpl& impl, const MergeRequest& request, const void* result);

}  // namespace collective::distribute::detail
