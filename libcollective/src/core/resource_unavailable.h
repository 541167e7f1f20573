// Raised by an algorithm's run() when every rank of the communicator has
// learned, in one and the same step, that a resource the algorithm needs
// cannot be had (the node's shared-memory segment does not fit in
// /dev/shm), before any buffer was touched. The algorithm has recorded
// the shortage in the communicator's state, so that selection no longer
// offers the algorithms that need it; dispatch serves the call with
// another (AUTO, with a log line) or raises this error (a forced
// algorithm). It is an UnsupportedError with the shortage as its cause.
#pragma once

#include "collective/errors.h"

namespace collective::internal {

class ResourceUnavailable : public UnsupportedError {
 public:
  using UnsupportedError::UnsupportedError;
};

}  // namespace collective::internal
