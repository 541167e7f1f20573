// The handle of a collective started with one of Communicator's `_async`
// calls (docs/architecture.md, "Calls in flight"; docs/errors.md, "Calls in
// flight").
#pragma once

#include "collective/export.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace collective {

namespace internal {
class WorkState;
}  // namespace internal

// One collective in flight. The library completes it on its own, in the
// communicator's progress thread, while the caller computes: the caller
// need not enter the library for it to finish.
//
// Contract:
// - wait() returns once the call finished, running the call (and those
//   issued before it) on the waiting thread when the progress thread is
//   not running one; when the call failed it rethrows
//   the call's error, the same type and text the blocking call raises
//   (MismatchError, TimeoutError, CommunicationError, UnsupportedError,
//   ...). It may be called again: it rethrows the same error each time.
// - wait(timeout) waits at most `timeout`: true when the call finished (and
//   then as wait()), false when it is still in flight. Expiry changes
//   nothing: the call keeps running under its own timeout
//   (CommonOptions::timeout, counted from when the call starts, after the
//   calls before it on the communicator) and the handle stays valid.
// - test() never blocks: false while in flight; true when finished, after
//   rethrowing the call's error if it failed. is_completed() is test()
//   without the rethrow (true also when the call failed).
// - While the call is in flight, its receive buffer must not be read or
//   written and its send buffer must not be written (in place: neither).
//   The v-forms' count and displacement spans and the options are copied
//   when the call starts: they may be reused at once. Argument errors
//   (null buffer, bad root, wrong span length, ...) are raised by the
//   `_async` call itself, before anything is queued.
// - Destroying a Work (or every copy of it) before the call finished does
//   not cancel it: the call still runs to completion in program order, its
//   buffers are still written, and a failure nobody waited for is logged
//   (WARN, with the error's text). The buffers must therefore outlive the
//   call, not the handle: wait() on another call issued later on the same
//   communicator, or any blocking call on it, guarantees that it finished.
// - Freeing or destroying the communicator, a blocking call on it and
//   Environment's destructor (or the program's MPI_Finalize) first wait for
//   every call in flight on it, each bounded by its own timeout.
// A default-constructed Work is already complete (a no-op).
class COLLECTIVE_API Work {
 public:
  Work() = default;

  void wait();
  bool wait(std::chrono::milliseconds timeout);
  bool test();
  bool is_completed() const;

  // Runs `callback` once the call finished (succeeded or failed): at once,
  // on this thread, when it already has; otherwise on the progress thread
  // right after the call, before wait() returns anywhere (test() and
  // is_completed() may already say finished while it runs). Meant for
  // completion hooks such as an MPI generalized request's: the callback
  // must not block, must not throw and must not call the library. One
  // callback per call (a second replaces the first).
  void on_completion(std::function<void()> callback);

  // "all_reduce #12": the call's operation, as its errors name it.
  std::string operation() const;

  Work(const Work&) = default;
  Work& operator=(const Work&) = default;
  Work(Work&&) noexcept = default;
  Work& operator=(Work&&) noexcept = default;
  ~Work();

 private:
  friend class Communicator;
  friend class Plan;
  COLLECTIVE_HIDDEN explicit Work(std::shared_ptr<internal::WorkState> state);
  std::shared_ptr<internal::WorkState> state_;
};

}  // namespace collective
