// The path every collective takes: checks, algorithm choice, the run, and
// the communicator's poisoning after a communication failure.
#pragma once

#include "collective/options.h"
#include "core/communicator_state.h"
#include "core/request.h"

namespace collective::internal {

// Fills in the request's sequence number, timeout, deadline and algorithm
// from `options`, validates it and runs it. The caller makes sure no
// `_async` call is in flight on the communicator (api/progress_engine.h).
void run_collective(CommunicatorState& state, Request& request, const CommonOptions& options);

// The same for a request whose sequence number was taken when the program
// issued it (an `_async` call, run by the progress thread).
void run_numbered_collective(CommunicatorState& state, Request& request,
                             const CommonOptions& options);

// The argument checks run_collective makes before touching anything
// (options applied, core/argument_checks.h), alone: throws what the call
// would raise for its own arguments.
void check_arguments(const CommunicatorState& state, Request request, const CommonOptions& options);

// What run_collective would choose, without running anything.
Algorithm resolve_algorithm(const CommunicatorState& state, Request request,
                            const CommonOptions& options);

}  // namespace collective::internal
