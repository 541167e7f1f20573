// A new communicator's flight recorder (core/flight_recorder.h), named by
// its members' world ranks so that every member's dump names it alike; the
// trace starts with the first one when COLLECTIVE_TRACE asks for it.
#pragma once

#include <string>

#include "core/communicator_state.h"

namespace collective::internal {

// `shrunk_from`: for Communicator::shrink, the id of the communicator it
// shrank (its dump names it).
void attach_flight_recorder(CommunicatorState& state, const std::string& shrunk_from = "");

}  // namespace collective::internal
