// Raised by an algorithm's run() when every rank of the communicator has
// learned, in one and the same step, that a resource the algorithm needs
// cannot be had (the node's shared-memory segment does not fit in
// /dev/shm), before any buffer was touched. The algorithm has recorded
// the shortage in the communicator's state, so that selection no longer
// offers the algorithms that need it; dispatch serves the call with
// another (AUTO, with a log line) or raises this error (a forced
// algorithm). It is an UnsupportedError with the shortage as its cause.
#pragma once

#include <string>

#include "collective/errors.h"

namespace collective::internal {

class ResourceUnavailable : public UnsupportedError {
 public:
  using UnsupportedError::UnsupportedError;
};

// Logs a shortage (or a shrink to fit one). A full /dev/shm repeats with
// every communicator a program makes, so only the process's first report
// is a WARN line (it says so); later ones are INFO.
void log_shortage(const std::string& message);

}  // namespace collective::internal
