// The state behind a Communicator handle, for the library's own tools and
// white-box tests (collective_info prints AUTO's choices from it). The
// public header keeps it private: it is not part of the API.
#pragma once

#include "collective/communicator.h"
#include "core/communicator_state.h"

namespace collective::internal {

struct CommunicatorAccess {
  static CommunicatorState& state(const Communicator& communicator) { return communicator.state(); }
};

}  // namespace collective::internal
