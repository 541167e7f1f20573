// A persistent collective: one call, with its buffers, made once and
// started many times (MPI-4's MPI_Allreduce_init; docs/architecture.md,
// "Calls in flight"; docs/errors.md, "Calls in flight").
#pragma once

#include "collective/export.h"
#include "collective/work.h"

#include <memory>
#include <string>

namespace collective {

namespace internal {
class PlanState;
}  // namespace internal

// Made by Communicator::all_reduce_init (or any other collective's _init
// form, e.g. all_to_all_v_init). Creation is a collective call:
// every rank creates the same plan (same operation, count, type, op,
// root, options) in the same program order among the communicator's
// other calls; it checks the arguments, chooses the algorithm and agrees
// with the other ranks once, and a disagreement there is a MismatchError
// (an argument error on one rank: InvalidArgumentError there and on the
// others, as for the blocking call) on every rank. Nothing is written to
// the buffers at creation.
//
// Contract:
// - start() runs the call once more on the buffers given at creation, in
//   program order with the communicator's other calls, and returns its
//   Work (work.h's rules apply: wait, test, errors, buffers in flight).
//   Each start counts as one call of the communicator: every rank must
//   start its plans in the same order, interleaved the same way with its
//   other calls.
// - Each start still agrees with the other ranks, cheaply: it carries the
//   plan's fingerprint, made at creation, with the start's sequence number
//   and the plan's identity (its creation's number) in the fingerprint's
//   tag field. A rank that starts another plan, or its plans in another
//   order, or a blocking call at that turn, gets the MismatchError of
//   docs/errors.md on every rank (or, where one side waits for something
//   never sent, a TimeoutError naming what it waited for), never a result.
// - Who runs a start: a program that waits for each start at once gets
//   the call run by its wait() on its own thread, with no thread woken; a
//   program that computes between start and wait gets it run by the
//   communicator's progress thread from the next start on (the plan
//   learns which from its latest start). Either way a start completes
//   without the caller: one nobody waits for is handed to the progress
//   thread within 10 ms.
// - start() while the plan's previous start is unfinished is an
//   InvalidArgumentError raised by start() itself; the previous start is
//   unaffected. Wait for (or test until complete) the previous Work first.
// - The buffers are read and written only while a start is in flight;
//   between starts the caller may change them freely.
// - Destroying the plan (every copy) with a start in flight does not
//   cancel it: the start runs to completion as a dropped Work does.
//   (The C API's collective_plan_free refuses instead: docs/errors.md,
//   "Calls in flight".)
// - A plan belongs to its communicator; it keeps the communicator's state
//   alive, and freeing the communicator first makes start() an error.
class COLLECTIVE_API Plan {
 public:
  Plan() = default;

  Work start();
  // The previous start's Work (a complete no-op Work before the first).
  Work last_start() const;
  // "all_reduce plan #4 (count 7, float32, sum)": as its errors name it.
  std::string describe() const;

  Plan(const Plan&) = default;
  Plan& operator=(const Plan&) = default;
  Plan(Plan&&) noexcept = default;
  Plan& operator=(Plan&&) noexcept = default;
  ~Plan();

 private:
  friend class Communicator;
  COLLECTIVE_HIDDEN explicit Plan(std::shared_ptr<internal::PlanState> state);
  std::shared_ptr<internal::PlanState> state_;
};

}  // namespace collective
