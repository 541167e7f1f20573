// Which algorithm serves a call: the forced one (option or
// COLLECTIVE_ALGORITHM), else AUTO's choice. Every rank must reach the same
// decision, so the choice depends only on arguments all ranks share.
#pragma once

#include <string>

#include "algorithms/algorithm.h"

namespace collective::internal {

struct Selection {
  const CollectiveAlgorithm* algorithm = nullptr;
  const char* reason = "";  // why, for COLLECTIVE_DEBUG and collective_info (static text)
};

// Raises UnsupportedError when a forced algorithm cannot serve the request
// (or is not built in), naming the algorithm and the reason.
Selection select_algorithm(const Request& request, const CommunicatorState& state);

}  // namespace collective::internal
