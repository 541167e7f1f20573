// Turns for making communicators from several threads.
//
// ParentTurn: a rank makes the communicators of one parent MPI
// communicator one after another. Making one (MPI_Comm_idup) is a
// collective on the parent, and MPI pairs each rank's k-th collective on a
// communicator with every other rank's k-th; two threads duplicating one
// parent at the same time would be two collectives on it at once, which
// MPI forbids at every thread level (and which crashed or crossed
// messages). The second thread waits for the first (not holding any lock
// MPI needs): which thread of one rank pairs with which thread of another
// is then the order each rank's threads got their turn, which the library
// cannot know; make them in one thread, or give each thread its own parent.
//
// CreationTurn: below MPI_THREAD_MULTIPLE, a process makes one
// communicator at a time. MPI has no non-blocking MPI_Comm_split(_type),
// and a blocking MPI call is made holding the library's MPI lock
// (mpi_thread_level.h), which a second blocking call on another rank,
// entered in the opposite order, would deadlock. So a making takes the
// process's turn if it is free (never waits for it) and every rank of the
// parent says whether it got it (agree_on_creation_turn, a non-blocking
// exchange within the timeout); when one did not, every rank raises
// InvalidArgumentError and nothing is made. At MULTIPLE there is no turn.
#pragma once

#include <mpi.h>

#include <mutex>

namespace collective::internal {

class ParentTurn {
 public:
  explicit ParentTurn(MPI_Comm parent);
  ~ParentTurn();
  ParentTurn(const ParentTurn&) = delete;
  ParentTurn& operator=(const ParentTurn&) = delete;

 private:
  MPI_Comm parent_;
};

class CreationTurn {
 public:
  // Takes the process's turn when the MPI thread level is below MULTIPLE
  // and no other thread holds it.
  CreationTurn();
  ~CreationTurn();
  CreationTurn(const CreationTurn&) = delete;
  CreationTurn& operator=(const CreationTurn&) = delete;
  // True when there is no turn to take (MULTIPLE) or this one holds it.
  bool held() const { return !needed_ || held_; }
  bool needed() const { return needed_; }

 private:
  bool needed_ = false;
  bool held_ = false;
};

// Below MULTIPLE: every rank of `comm` (the parent) learns whether every
// rank got its turn; raises InvalidArgumentError on every rank when one did
// not. A no-op at MULTIPLE (no message is exchanged).
void agree_on_creation_turn(const CreationTurn& turn, MPI_Comm comm, const char* operation,
                            int rank);

}  // namespace collective::internal
