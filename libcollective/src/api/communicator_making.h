// What every making of a communicator from an existing one (split, subset,
// to_mpi) checks first.
#pragma once

namespace collective::internal {

struct CommunicatorState;

// The message of any call on a null communicator (split's undefined color).
inline constexpr const char* kNullCommunicator =
    "the communicator is null: this rank passed Communicator::kUndefinedColor to split, so it "
    "belongs to no group";

// A live, unpoisoned communicator, MPI running, and this thread allowed;
// raises naming `operation` otherwise.
void require_can_make_communicator(const CommunicatorState& self, const char* operation);

}  // namespace collective::internal
