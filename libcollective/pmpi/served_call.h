// What every intercepted entry point shares: whether its communicator can be
// served at all (the target), the call's options, and serving it with the
// library, a failure reported the MPI way. The rule for passing a call to
// PMPI_ is docs/embedding.md's "What is served"; the entry points check the
// arguments (rule 4 on) in between.
//
// The fast path (a communicator served before, on this thread) makes no MPI
// call, builds no string and allocates nothing: the target comes from
// comm_cache.h, datatypes from mpi_types.h's table.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <type_traits>

#include "call_log.h"
#include "collective/communicator.h"
#include "collective/errors.h"
#include "comm_cache.h"
#include "comm_map.h"
#include "started_request.h"

// Marks an MPI_* entry point for export: the drop-in's own code is hidden
// (no PLT on its path), and MPICH's mpi.h, unlike Open MPI's, does not mark
// its declarations visible unless built with HAVE_VISIBILITY.
#define COLLECTIVE_PMPI_ENTRY __attribute__((visibility("default")))

namespace collective::pmpi {

// MPI runs at MPI_THREAD_MULTIPLE (asked of MPI once, after MPI_Init).
bool mpi_thread_multiple();

// MPI_Finalize was called (set by the drop-in's MPI_Finalize).
bool mpi_finalized();
void mark_mpi_finalized();

// The communicator a call would be served on.
struct Target {
  const ServedComm* cached = nullptr;  // served before on this thread: a live intracommunicator
  int rank = -1;
  int size = 0;
  const char* pass_reason = nullptr;  // non-null: the communicator cannot be served

  // Found in the cache, or, failing that, asked of MPI (rules 2 and 3).
  static Target of(MPI_Comm comm) {
    if (const ServedComm* hit = cached_comm(comm)) return Target{hit, hit->rank, hit->size};
    return asked_of_mpi(comm);
  }

  // For an MPI_I* call (Form::kStarted): also passed below
  // MPI_THREAD_MULTIPLE, where the library's progress thread may not call
  // MPI (docs/embedding.md, "Nonblocking collectives").
  template <Form kForm>
  static Target of_form(MPI_Comm comm) {
    Target target = of(comm);
    if (kForm == Form::kStarted && !target.pass_reason && !mpi_thread_multiple()) {
      target.pass_reason = "MPI thread level below MPI_THREAD_MULTIPLE";
    }
    return target;
  }

 private:
  static Target asked_of_mpi(MPI_Comm comm);
};

// This rank in `comm` for a log line (-1 when logging is off or comm is null).
int rank_for_log(MPI_Comm comm);

// Whether [a, a + a_bytes) and [b, b + b_bytes) overlap other than by being
// the same buffer.
inline bool overlap_not_equal(const void* a, std::size_t a_bytes, const void* b,
                              std::size_t b_bytes) {
  const auto* x = static_cast<const char*>(a);
  const auto* y = static_cast<const char*>(b);
  if (x == y || a_bytes == 0 || b_bytes == 0) return false;
  return x < y + b_bytes && y < x + a_bytes;
}

// COLLECTIVE_PMPI_TIMEOUT, read once: the timeout of a served call (default
// one day), or the error a malformed value raises on every served call.
struct TimeoutSetting {
  std::chrono::milliseconds timeout{86'400'000};
  std::string error;
};
extern std::atomic<const TimeoutSetting*> timeout_setting_read;
const TimeoutSetting& read_timeout_setting();
inline const TimeoutSetting& timeout_setting() {
  const TimeoutSetting* read = timeout_setting_read.load(std::memory_order_acquire);
  return read != nullptr ? *read : read_timeout_setting();
}
[[noreturn]] void throw_timeout_error(int rank);

// The timeout of a served call; a malformed COLLECTIVE_PMPI_TIMEOUT throws
// InvalidArgumentError naming `rank`.
inline std::chrono::milliseconds call_timeout(int rank) {
  const TimeoutSetting& setting = timeout_setting();
  if (!setting.error.empty()) throw_timeout_error(rank);
  return setting.timeout;
}

template <typename Options>
Options options_for(int rank) {
  Options options;
  options.timeout = call_timeout(rank);
  return options;
}

// Reports a failure the MPI way: one line on stderr with the library's
// message (an error class alone cannot carry it), then the communicator's
// error handler, whose verdict (abort, or return the class) stands.
int raise_through_errhandler(Intercepted call, MPI_Comm comm, int error_class, const char* message,
                             Form form = Form::kBlocking);
int error_class_of(const Error& error);
void log_served_call(Intercepted call, const Communicator& communicator);

// What a started call reads until it finished, beyond the caller's buffers
// (an in-place input's copy); kept by its request.
using KeepAlive = std::shared_ptr<void>;

// Serves a call: body(communicator) runs the libcollective collective.
template <typename Body>
int serve(Intercepted call, MPI_Comm comm, const Target& target, Body&& body) {
  try {
    Communicator& communicator = target.cached != nullptr ? *target.cached->communicator
                                                          : *mapped_communicator(comm).communicator;
    body(communicator);
    if (log_level() > 0) log_served_call(call, communicator);
    return MPI_SUCCESS;
  } catch (const Error& error) {
    return raise_through_errhandler(call, comm, error_class_of(error), error.what());
  } catch (const std::bad_alloc&) {
    return raise_through_errhandler(call, comm, MPI_ERR_NO_MEM, "out of memory");
  } catch (const std::exception& error) {
    return raise_through_errhandler(call, comm, MPI_ERR_INTERN, error.what());
  } catch (...) {
    return raise_through_errhandler(call, comm, MPI_ERR_INTERN, "unknown exception");
  }
}

// Serves an MPI_I* call: body(communicator, keep_alive) starts the
// libcollective `_async` call and returns its Work, which becomes *request
// (started_request.h). A failure to start is reported as a blocking call's.
template <typename Body>
int serve_started(Intercepted call, MPI_Comm comm, const Target& target, MPI_Request* request,
                  Body&& body) {
  try {
    Communicator& communicator = target.cached != nullptr ? *target.cached->communicator
                                                          : *mapped_communicator(comm).communicator;
    KeepAlive keep_alive;
    Work work = body(communicator, keep_alive);
    // Counted served or failed when it finished (started_request.cc).
    start_request(call, target.rank, std::move(work), std::move(keep_alive), request);
    return MPI_SUCCESS;
  } catch (const Error& error) {
    return raise_through_errhandler(call, comm, error_class_of(error), error.what(),
                                    Form::kStarted);
  } catch (const std::bad_alloc&) {
    return raise_through_errhandler(call, comm, MPI_ERR_NO_MEM, "out of memory", Form::kStarted);
  } catch (const std::exception& error) {
    return raise_through_errhandler(call, comm, MPI_ERR_INTERN, error.what(), Form::kStarted);
  } catch (...) {
    return raise_through_errhandler(call, comm, MPI_ERR_INTERN, "unknown exception",
                                    Form::kStarted);
  }
}

// One entry point's code for both forms: body(communicator, keep_alive)
// makes the blocking call (returning nothing) or starts the `_async` one
// (returning its Work).
template <Form kForm, typename Body>
int serve_as(Intercepted call, MPI_Comm comm, const Target& target, MPI_Request* request,
             Body&& body) {
  if constexpr (kForm == Form::kBlocking) {
    return serve(call, comm, target, [&](Communicator& communicator) {
      KeepAlive unused;
      body(communicator, unused);
    });
  } else {
    return serve_started(call, comm, target, request, body);
  }
}

}  // namespace collective::pmpi
