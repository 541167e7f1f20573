// The path every collective takes: checks, algorithm choice, the run, and
// the communicator's poisoning after a communication failure.
#pragma once

#include "collective/options.h"
#include "core/communicator_state.h"
#include "core/request.h"

namespace collective::internal {

// Fills in the request's sequence number, timeout, deadline and algorithm
// from `options`, validates it and runs it.
void run_collective(CommunicatorState& state, Request& request, const CommonOptions& options);

// What run_collective would choose, without running anything.
Algorithm resolve_algorithm(const CommunicatorState& state, Request request,
                            const CommonOptions& options);

}  // namespace collective::internal
