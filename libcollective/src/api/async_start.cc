#include "api/async_start.h"

#include <string>
#include <utility>

#include "api/dispatch.h"
#include "api/progress_engine.h"
#include "api/usable_communicator.h"
#include "collective/errors.h"
#include "core/env_params.h"
#include "core/mpi_thread_level.h"

namespace collective::internal {
namespace {

// The call's own copies of the v-forms' spans: the caller may reuse its
// arrays as soon as the `_async` call returns.
std::unique_ptr<QueuedCall> queued_copy(const Request& request, const CommonOptions& options) {
  auto call = std::make_unique<QueuedCall>();
  call->request = request;
  call->options = options;
  call->send_counts.assign(request.send_counts.begin(), request.send_counts.end());
  call->send_displacements.assign(request.send_displacements.begin(),
                                  request.send_displacements.end());
  call->recv_counts.assign(request.recv_counts.begin(), request.recv_counts.end());
  call->recv_displacements.assign(request.recv_displacements.begin(),
                                  request.recv_displacements.end());
  call->request.send_counts = call->send_counts;
  call->request.send_displacements = call->send_displacements;
  call->request.recv_counts = call->recv_counts;
  call->request.recv_displacements = call->recv_displacements;
  return call;
}

}  // namespace

std::shared_ptr<WorkState> start_async(CommunicatorState& state, Request request,
                                       const CommonOptions& options) {
  // The number the call takes when queued: its label is the blocking call's.
  request.sequence = state.next_sequence;
  const auto label = [&] { return request.label() + " (async)"; };
  const auto* engine = static_cast<const ProgressEngine*>(state.progress_engine.get());
  // Poison and abort are written by the progress thread while calls are in
  // flight; then they are judged when this call starts, in program order,
  // and surface from wait(). With nothing in flight, here, as blocking.
  if (engine == nullptr || !engine->busy()) {
    require_usable(state, [&] { return request.label(); });
  }
  if (mpi_thread_level() < MPI_THREAD_MULTIPLE) {
    throw InvalidArgumentError(
        label(), state.rank,
        std::string("an _async call needs MPI_THREAD_MULTIPLE, MPI was initialised at ") +
            mpi_thread_level_name(mpi_thread_level()) +
            ": the library's progress thread calls MPI while the program's threads may too. "
            "Initialise MPI with MPI_THREAD_MULTIPLE (collective::Environment does), or use "
            "the blocking call");
  }
  std::unique_ptr<QueuedCall> call = queued_copy(request, options);
  try {
    check_arguments(state, call->request, call->options);
  } catch (const Error&) {
    // As the blocking call, the other ranks learn of the rejection in the
    // cross-rank check: the call still takes its turn and fails there. Its
    // error is this one, raised here, so the queued call's is not reported
    // again.
    if (env_params().validate && state.size > 1) {
      call->work = std::make_shared<WorkState>(request.label());
      call->work->mark_observed();
      ++state.next_sequence;
      progress_engine_of(state).enqueue(std::move(call));
    }
    throw;
  }
  call->work = std::make_shared<WorkState>(request.label());
  std::shared_ptr<WorkState> work = call->work;
  ++state.next_sequence;
  progress_engine_of(state).enqueue(std::move(call));
  return work;
}

}  // namespace collective::internal
