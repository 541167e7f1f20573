#include "api/communicator_making.h"

#include <string>

#include "collective/errors.h"
#include "core/communicator_state.h"
#include "core/mpi_lifetime.h"
#include "core/mpi_thread_level.h"

namespace collective::internal {

void require_can_make_communicator(const CommunicatorState& self, const char* operation) {
  if (self.size == 0) throw InvalidArgumentError(operation, -1, kNullCommunicator);
  if (self.freed) {
    throw InvalidArgumentError(operation, self.rank, "the communicator was freed");
  }
  if (self.poisoned) {
    const std::string cause = "communicator unusable after an earlier failure: " + *self.poisoned;
    if (!self.failed_ranks.empty()) {
      throw PeerFailedError(operation, self.rank, cause, self.failed_ranks);
    }
    throw CommunicationError(operation, self.rank, cause);
  }
  require_mpi_running(operation, self.rank);
  require_mpi_thread(operation, self.rank);
}

}  // namespace collective::internal
