// Whether a communicator can take a call at all (not null, not freed, not
// poisoned or aborted, MPI running, the right thread): what every
// collective and point-to-point call checks first, in this order.
#pragma once

#include <string>

#include "collective/errors.h"
#include "core/communicator_state.h"
#include "core/env_params.h"
#include "core/mpi_lifetime.h"
#include "core/mpi_thread_level.h"

namespace collective::internal {

// `label()` names the call ("all_reduce #3"); it is built only on failure,
// since this runs on every call. Returns the environment's parameters (a
// malformed variable raises here, on every rank).
template <typename Label>
const EnvParams& require_usable(CommunicatorState& state, const Label& label) {
  if (state.size == 0) {
    throw InvalidArgumentError(label(), -1,
                               "the communicator is null: this rank passed "
                               "Communicator::kUndefinedColor to split, so it belongs to no group");
  }
  if (state.freed) {
    throw InvalidArgumentError(label(), state.rank,
                               "the communicator was freed (Communicator::free)");
  }
  if (state.poisoned) {
    if (!state.failed_ranks.empty()) {
      throw PeerFailedError(label(), state.rank,
                            "communicator unusable after an earlier failure: " + *state.poisoned,
                            state.failed_ranks);
    }
    throw CommunicationError(label(), state.rank,
                             "communicator unusable after an earlier failure: " + *state.poisoned);
  }
  const EnvParams& params = env_params();
  if (mpi_finalize_started()) {
    throw InvalidArgumentError(label(), state.rank,
                               "MPI is already finalized (MPI_Finalize, or the destructor of "
                               "collective::Environment): no collective can run after it");
  }
  // The label is built for the refusal only: a call on the main thread (every
  // call of a program at MPI_THREAD_SINGLE, the MPI drop-in's usual case)
  // makes no string.
  if (mpi_main_thread_only() && !on_mpi_main_thread()) {
    require_mpi_thread(label().c_str(), state.rank);
  }
  if (state.abort_requested()) {
    state.poisoned = "aborted by Communicator::abort: " + state.abort_reason();
    throw CommunicationError(label(), state.rank, *state.poisoned);
  }
  return params;
}

}  // namespace collective::internal
