#include "collective/errors.h"

namespace collective {

Error::Error(std::string operation, int rank, std::string cause)
    : std::runtime_error(operation + " (rank " + std::to_string(rank) + "): " + cause),
      operation_(std::move(operation)),
      rank_(rank),
      cause_(std::move(cause)) {}

PeerFailedError::PeerFailedError(std::string operation, int rank, std::string cause,
                                 std::vector<int> failed_ranks)
    : CommunicationError(std::move(operation), rank, std::move(cause)),
      failed_ranks_(std::move(failed_ranks)) {}

}  // namespace collective
