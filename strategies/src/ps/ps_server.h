// A ps task's service loop (ps_server.cc).
#pragma once

#include <memory>

namespace collective::distribute::detail {

struct PsCluster;

// Returns when the chief shuts the cluster down, true when every send (the
// bye included) completed.
bool serve_parameters(const std::shared_ptr<PsCluster>& cluster);

}  // namespace collective::distribute::detail
