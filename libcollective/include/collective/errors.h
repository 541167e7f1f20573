// One exception hierarchy for every failure. See docs/errors.md for which
// errors leave the communicator usable.
#pragma once

#include "collective/export.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace collective {

// Base of all library errors. what() reads
//   "<operation> (rank <r>): <cause>"
// operation() names the call ("all_reduce #17", "Communicator::split", ...),
// rank() the rank that raised it (-1 when not known).
class COLLECTIVE_API Error : public std::runtime_error {
 public:
  Error(std::string operation, int rank, std::string cause);

  const std::string& operation() const noexcept { return operation_; }
  int rank() const noexcept { return rank_; }
  const std::string& cause() const noexcept { return cause_; }

 private:
  std::string operation_;
  int rank_;
  std::string cause_;
};

// The caller passed something the call cannot accept (null buffer, bad root,
// overlapping buffers, unknown type, ...). Raised before any buffer is
// touched and before any communication; the communicator stays usable.
class COLLECTIVE_API InvalidArgumentError : public Error {
 public:
  using Error::Error;
};

// The ranks called the same collective with different arguments (count,
// type, op, root, algorithm, or a different collective altogether).
class COLLECTIVE_API MismatchError : public InvalidArgumentError {
 public:
  using InvalidArgumentError::InvalidArgumentError;
};

// The request is valid but the named algorithm or build cannot serve it
// (e.g. NCCL forced on host buffers, or a build without NCCL).
class COLLECTIVE_API UnsupportedError : public Error {
 public:
  using Error::Error;
};

// The transport failed (an MPI, NCCL or CUDA error, a peer that died).
// The communicator is poisoned: later calls fail at once with this cause.
class COLLECTIVE_API CommunicationError : public Error {
 public:
  using Error::Error;
};

// The call did not complete within its timeout. The message names what it
// was waiting for. The communicator is poisoned.
class COLLECTIVE_API TimeoutError : public CommunicationError {
 public:
  using CommunicationError::CommunicationError;
};

// A rank of the call died: its process is gone (killed, crashed, exited
// without finishing the communicator). failed_ranks() names the dead ranks
// in this communicator's numbering, ascending. The communicator is
// poisoned: every later call on it raises this error again at once, with
// the same ranks (docs/errors.md, "When a rank dies").
class COLLECTIVE_API PeerFailedError : public CommunicationError {
 public:
  PeerFailedError(std::string operation, int rank, std::string cause,
                  std::vector<int> failed_ranks);

  const std::vector<int>& failed_ranks() const noexcept { return failed_ranks_; }

 private:
  std::vector<int> failed_ranks_;
};

}  // namespace collective
