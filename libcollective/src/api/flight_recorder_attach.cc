#include "api/flight_recorder_attach.h"

#include <mpi.h>

#include <utility>
#include <vector>

#include "core/flight_recorder.h"
#include "core/rank_translation.h"
#include "core/trace.h"

namespace collective::internal {

void attach_flight_recorder(CommunicatorState& state, const std::string& shrunk_from) {
  CommunicatorIdentity identity;
  identity.origin = state.origin;
  identity.rank = state.rank;
  identity.size = state.size;
  identity.members = ranks_in(state.comm, MPI_COMM_WORLD);
  identity.shrunk_from = shrunk_from;
  state.flight_recorder = make_flight_recorder(std::move(identity));
  start_trace_if_requested();
}

}  // namespace collective::internal
