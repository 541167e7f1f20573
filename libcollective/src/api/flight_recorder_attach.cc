#include "api/flight_recorder_attach.h"

#include <mpi.h>

#include <utility>
#include <vector>

#include "core/flight_recorder.h"
#include "core/mpi_thread_level.h"
#include "core/trace.h"

namespace collective::internal {

void attach_flight_recorder(CommunicatorState& state) {
  CommunicatorIdentity identity;
  identity.origin = state.origin;
  identity.rank = state.rank;
  identity.size = state.size;
  std::vector<int> ranks(static_cast<std::size_t>(state.size));
  for (int r = 0; r < state.size; ++r) ranks[static_cast<std::size_t>(r)] = r;
  identity.members.assign(ranks.size(), MPI_UNDEFINED);
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Group world_group = MPI_GROUP_NULL;
  {
    const MpiLock lock;
    if (MPI_Comm_group(state.comm, &group) == MPI_SUCCESS &&
        MPI_Comm_group(MPI_COMM_WORLD, &world_group) == MPI_SUCCESS) {
      MPI_Group_translate_ranks(group, state.size, ranks.data(), world_group,
                                identity.members.data());
    }
    if (group != MPI_GROUP_NULL) MPI_Group_free(&group);
    if (world_group != MPI_GROUP_NULL) MPI_Group_free(&world_group);
  }
  state.flight_recorder = make_flight_recorder(std::move(identity));
  start_trace_if_requested();
}

}  // namespace collective::internal
