#include "started_request.h"

#include <atomic>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <utility>

#include "call_log.h"
#include "collective/errors.h"
#include "reentry_guard.h"
#include "served_call.h"

// The library's progress thread runs a started call's algorithm, whose MPI
// calls (MPI_Iallreduce of the mpi algorithm, ...) must reach PMPI_ as they
// do on the caller's thread inside the drop-in: the thread is inside the
// drop-in for good. Called by libcollective (a weak reference) first thing
// on every progress thread.
extern "C" __attribute__((visibility("default"))) void collective_progress_thread_started() {
  static thread_local collective::pmpi::ReentryGuard inside_for_good;
  (void)inside_for_good;
}

namespace collective::pmpi {
namespace {

// Shared by MPI (the request's extra state, until free_fn) and the Work's
// completion callback (until MPI_Grequest_complete): whichever lets go
// last deletes it.
struct StartedCall {
  Intercepted call;
  int rank;
  std::shared_ptr<void> keep_alive;
  MPI_Request request = MPI_REQUEST_NULL;
  int error_class = MPI_SUCCESS;  // written before MPI_Grequest_complete
  std::atomic<int> holders{2};
};

void release(StartedCall* started) {
  if (started->holders.fetch_sub(1, std::memory_order_acq_rel) == 1) delete started;
}

int query(void* extra_state, MPI_Status* status) {
  const auto* started = static_cast<const StartedCall*>(extra_state);
  // A collective's status: no source, no tag, nothing counted.
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  status->MPI_ERROR = started->error_class;
  return started->error_class;
}

int free_request(void* extra_state) {
  release(static_cast<StartedCall*>(extra_state));
  return MPI_SUCCESS;
}

int refuse_cancel(void* extra_state, int complete) {
  const auto* started = static_cast<const StartedCall*>(extra_state);
  if (!complete) {
    std::fprintf(stderr,
                 "libcollective_mpi: MPI_Cancel: rank %d: a nonblocking collective (%s) cannot be "
                 "cancelled; it runs to its end\n",
                 started->rank, mpi_name(started->call, Form::kStarted));
  }
  return MPI_ERR_REQUEST;
}

// The progress thread, once the call finished: its outcome into the
// request, then the request complete.
void complete(StartedCall* started, const Work& work) {
  try {
    Work observed = work;
    observed.test();  // rethrows the call's error
    // Its algorithm is not asked for: that would wait for the calls
    // queued behind it.
    if (log_level() > 0) log_served(started->call, started->rank, "in flight", Form::kStarted);
  } catch (const Error& error) {
    started->error_class = error_class_of(error);
    log_failed(started->call, started->rank, Form::kStarted);
    std::fprintf(stderr, "libcollective_mpi: %s: %s\n", mpi_name(started->call, Form::kStarted),
                 error.what());
  } catch (...) {
    started->error_class = MPI_ERR_INTERN;
    log_failed(started->call, started->rank, Form::kStarted);
    std::fprintf(stderr, "libcollective_mpi: %s: rank %d: unknown failure\n",
                 mpi_name(started->call, Form::kStarted), started->rank);
  }
  started->keep_alive.reset();
  PMPI_Grequest_complete(started->request);
  release(started);
}

}  // namespace

void start_request(Intercepted call, int rank, Work work, std::shared_ptr<void> keep_alive,
                   MPI_Request* request) {
  auto* started = new StartedCall{call, rank, std::move(keep_alive)};
  const int rc =
      PMPI_Grequest_start(&query, &free_request, &refuse_cancel, started, &started->request);
  if (rc != MPI_SUCCESS) {
    // The call is queued and runs anyway (every rank queued it); only its
    // request could not be made.
    started->holders.store(1);
    work.on_completion([started] { release(started); });
    throw CommunicationError(std::string(mpi_name(call, Form::kStarted)), rank,
                             "MPI_Grequest_start failed with code " + std::to_string(rc));
  }
  *request = started->request;
  // The callback holds the Work's state only through `work`'s copy inside
  // it; it is dropped with the callback once it ran.
  work.on_completion([started, work] { complete(started, work); });
}

}  // namespace collective::pmpi
