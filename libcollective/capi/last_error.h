// The C API's error boundary: every entry point runs its body through
// guarded(), which turns a C++ exception into a status code and keeps the
// message for this thread (collective_last_error). Nothing escapes.
#pragma once

#include <exception>
#include <string>
#include <utility>

#include "collective/collective_c.h"

namespace collective::capi {

// Records a failure for this thread and returns its status.
int fail(int status, std::string message);
// Records a failure of the C layer itself ("<operation> (rank <r>): <cause>").
int fail_argument(const char* operation, int rank, const std::string& cause);
// Maps the exception in flight to a status and records its message.
int fail_from_current_exception(const char* operation, int rank) noexcept;

// Runs body (returning nothing); any exception becomes a status.
// `rank` names this process in messages of non-library exceptions.
template <typename Body>
int guarded(const char* operation, int rank, Body&& body) noexcept {
  try {
    std::forward<Body>(body)();
    return COLLECTIVE_SUCCESS;
  } catch (...) {
    return fail_from_current_exception(operation, rank);
  }
}

}  // namespace collective::capi
