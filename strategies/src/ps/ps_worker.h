// A worker's service loop (ps_worker.cc).
#pragma once

#include <memory>

namespace collective::distribute::detail {

struct PsCluster;

// Returns when the chief shuts the cluster down, true when every send (the
// bye included) completed.
bool serve_closures(const std::shared_ptr<PsCluster>& cluster);

}  // namespace collective::distribute::detail
