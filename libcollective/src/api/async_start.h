// What a Communicator `_async` call does before it returns: the checks the
// blocking call makes before touching anything, then the call queued on the
// communicator's progress engine in program order (docs/errors.md, "Calls
// in flight").
#pragma once

#include <memory>

#include "api/work_state.h"
#include "collective/options.h"
#include "core/communicator_state.h"
#include "core/request.h"

namespace collective::internal {

// Raises, on the caller's thread and with the blocking call's text, what
// the blocking call raises for its own arguments or an unusable
// communicator; refuses below MPI_THREAD_MULTIPLE. Otherwise takes the
// call's sequence number and queues it; the returned state is its Work's.
std::shared_ptr<WorkState> start_async(CommunicatorState& state, Request request,
                                       const CommonOptions& options);

}  // namespace collective::internal
