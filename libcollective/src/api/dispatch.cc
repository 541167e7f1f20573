#include "api/dispatch.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <sstream>

#include "api/call_recording.h"
#include "api/prepared_call.h"
#include "api/usable_communicator.h"
#include "collective/errors.h"
#include "collective/in_tree/collectives.h"
#include "core/coarse_clock.h"
#include "core/env_params.h"
#include "core/exclusive_use.h"
#include "core/failure_record.h"
#include "core/log.h"
#include "core/mpi_lifetime.h"
#include "core/resource_unavailable.h"
#include "core/trace.h"
#include "core/argument_checks.h"
#include "core/mpi_thread_level.h"
#include "gpu/device_runtime.h"
#include "gpu/memory_kind.h"
#include "selection/selector.h"
#include "cross_rank_check/call_fingerprint.h"
#include "cross_rank_check/cross_rank_check.h"

namespace collective::internal {
namespace {

void apply_options(Request& request, const CommonOptions& options, const EnvParams& params) {
  request.requested = options.algorithm;
  if (request.requested == Algorithm::kAuto && params.forced_algorithm) {
    request.requested = *params.forced_algorithm;
  }
  request.forced = request.requested != Algorithm::kAuto;
  const bool reducing = traits_of(request.kind).reduces;
  request.deterministic = reducing && (request.deterministic || params.deterministic);
  request.memory = options.memory;
  request.call_tag = options.call_tag;
  request.timeout =
      options.timeout.count() > 0 ? std::min(options.timeout, kLongestTimeout) : params.timeout;
  if (options.timeout.count() < 0) request.timeout = options.timeout;  // rejected by validation
}

// One rank: the result is the input (MEAN divides by one): this rank's
// own block moves from where send holds it to where recv wants it. Device
// buffers are copied here too, never sent to NCCL: NCCL 2.28.9's one-rank
// ncclAvg leaves elements unwritten, and its one-rank path was 3 us slower
// than this copy on an H200 (docs/gpu.md, "What ran where").
void run_single_rank(const Request& request, int rank) {
  std::size_t from = 0;  // elements into send
  std::size_t to = 0;    // elements into recv
  std::size_t count = request.count;
  switch (request.kind) {
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kBarrier: return;
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduce:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kGather:
    case CollectiveKind::kScatter:
    case CollectiveKind::kReduceScatterV: break;
    case CollectiveKind::kAllToAllV:
      count = request.recv_counts[0];
      to = request.recv_displacements[0];
      from = request.send == request.recv ? to : request.send_displacements[0];
      break;
    case CollectiveKind::kAllGatherV:
    case CollectiveKind::kGatherV: to = request.recv_displacements[0]; break;
    case CollectiveKind::kScatterV: from = request.send_displacements[0]; break;
  }
  const std::size_t bytes = count * request.element_bytes();
  if (bytes == 0 || request.in_place(rank)) return;
  const auto* source = static_cast<const std::byte*>(request.send) + from * request.element_bytes();
  auto* target = static_cast<std::byte*>(request.recv) + to * request.element_bytes();
  if (source == target) return;
  if (request.memory == MemoryKind::kDevice) {
    gpu::copy_device_bytes(target, source, bytes, request.label(), rank);
  } else {
    std::memmove(target, source, bytes);
  }
}

// Whether a buffer's memory kind is the same whatever its address: no
// CUDA, or no device (every buffer is host memory).
bool memory_kind_is_fixed() { return !gpu::cuda_built_in() || gpu::device_count().count == 0; }

// This rank's own checks and the algorithm's choice. With validation on
// (and peers to tell), a rejection is held, not raised: the rank first
// tells the others (cross_rank_check/cross_rank_check.h).
struct OwnChecks {
  std::optional<Selection> selection;
  bool remembered = false;  // the memo holds this call (state.checked_call)
  std::exception_ptr rejection;
  bool unsupported = false;
  std::string rejection_cause;
};

OwnChecks check_and_select(CommunicatorState& state, Request& request, const CommonOptions& options,
                           const EnvParams& params) {
  OwnChecks checks;
  try {
    apply_options(request, options, params);
    // The same arguments as the last call that passed: the same verdict.
    // Remembered only where the memory kind does not depend on the
    // address (CUDA would tell it by pointer, and a freed buffer's address
    // may come back as another kind).
    if (state.checked_call.matches(request)) {
      request.memory = state.checked_call.resolved_memory;
      checks.selection = Selection{state.checked_call.algorithm, {}};
      checks.remembered = true;
      return checks;
    }
    validate_request(request, state.rank, state.size);
    const MemoryKind declared = request.memory;
    // kAuto asks CUDA (when built in) where the buffers live; a declared
    // kind is checked against it. Host algorithms refuse device buffers in
    // their supports(), so device buffers reach NCCL or an UnsupportedError.
    request.memory = gpu::resolve_memory_kind(request, state.rank);
    checks.selection = select_algorithm(request, state);
    if (memory_kind_is_fixed()) {
      state.checked_call.remember(request, declared, checks.selection->algorithm);
      checks.remembered = true;
    }
  } catch (const Error& error) {
    if (!params.validate || state.size == 1) throw;
    checks.rejection = std::current_exception();
    checks.unsupported = dynamic_cast<const UnsupportedError*>(&error) != nullptr;
    checks.rejection_cause = error.cause();
  }
  return checks;
}

// A call the memo holds is fingerprinted once (fingerprint_and_keep);
// its repeats only renumber what was kept (renumbered_fingerprint).
CallFingerprint renumbered_fingerprint(const CheckedCallMemo& memo, std::uint64_t sequence) {
  static_assert(CheckedCallMemo::kFingerprintHeaderBytes == kFingerprintHeaderBytes);
  CallFingerprint print;
  // Trivially copyable; the 216 bytes after the header stay zero.
  std::memcpy(static_cast<void*>(&print), memo.fingerprint_header.data(), kFingerprintHeaderBytes);
  print.sequence = sequence;
  return print;
}

CallFingerprint fingerprint_and_keep(CommunicatorState& state, const Request& request,
                                     const Selection& selection, bool remembered) {
  CallFingerprint print = fingerprint_of(request, selection.algorithm->id(), state.rank);
  if (remembered) {
    std::memcpy(state.checked_call.fingerprint_header.data(), &print, kFingerprintHeaderBytes);
    state.checked_call.fingerprinted = true;
  }
  return print;
}

// The call after it claimed the communicator and took its sequence number.
void run_claimed(CommunicatorState& state, Request& request, const CommonOptions& options,
                 CallRecording& recording) {
  const EnvParams& params = require_usable(state, [&] { return request.label(); });

  OwnChecks checks = check_and_select(state, request, options, params);
  const std::exception_ptr& rejection = checks.rejection;
  std::optional<Selection>& selection = checks.selection;
  const bool unsupported = checks.unsupported;
  const std::string& rejection_cause = checks.rejection_cause;
  if (selection) recording.algorithm(selection->algorithm->id(), request.requested);

  // One deadline bounds the whole call: the check and the algorithm. Read
  // at the clock's tick: a timeout may come up to a tick early.
  if (request.timeout.count() <= 0) request.timeout = params.timeout;
  request.deadline = coarse_now() + request.timeout;
  recording.started(request);
  try {
    const bool checked = params.validate && state.size > 1;
    // Made in place (a 256-byte object: no copy on a small call's path).
    const CallFingerprint mine =
        !checked    ? CallFingerprint{}
        : rejection ? rejected_fingerprint(request, state.rank, unsupported, rejection_cause)
        : checks.remembered && state.checked_call.fingerprinted
            ? renumbered_fingerprint(state.checked_call, request.sequence)
            : fingerprint_and_keep(state, request, *selection, checks.remembered);
    if (checked) {
      if (!rejection && selection->algorithm->carries_check(request, state)) {
        request.carried_check = &mine;  // the algorithm makes the check
      } else {
        const TraceScope traced("cross-rank check");
        check_across_ranks(mine, request, state);
      }
    }
    if (rejection) std::rethrow_exception(rejection);

    state.last_algorithm = selection->algorithm->id();
    COLLECTIVE_LOG(kDebug, request.label()
                               << " " << request.count << " x " << to_string(request.type) << " -> "
                               << selection->algorithm->name() << " (" << selection->reason << ")");
    if (state.size == 1) return run_single_rank(request, state.rank);
    try {
      const TraceScope traced(trace_enabled() ? selection->algorithm->name() : "");
      selection->algorithm->run(request, state);
    } catch (const ResourceUnavailable& shortage) {
      // Every rank learned of the shortage in the same step, before any
      // buffer was touched, and the algorithms that need the resource now
      // refuse: AUTO serves the call with another; a forced one cannot.
      if (request.forced) throw;
      state.selection_memo = {};
      state.checked_call = {};
      const Selection fallback = select_algorithm(request, state);
      std::ostringstream message;
      message << request.label() << ": " << selection->algorithm->name()
              << " is unavailable on this " << state.describe() << " (" << shortage.cause()
              << "); AUTO serves this and later calls without it, this one with "
              << fallback.algorithm->name();
      log_shortage(message.str());
      state.last_algorithm = fallback.algorithm->id();
      recording.algorithm(state.last_algorithm, request.requested);
      request.carried_check = nullptr;  // the cross-rank check was made before the run
      fallback.algorithm->run(request, state);
    }
  } catch (const CommunicationError& error) {
    // A rank of the call failed or timed out: messages of this call may
    // still be in flight, so no later call on this communicator can trust
    // what it receives.
    state.poison(error);
    record_communication_failure(error.what());
    throw;
  }
}

}  // namespace

void run_collective(CommunicatorState& state, Request& request, const CommonOptions& options) {
  ExclusiveUse exclusive(state, request.kind);
  request.sequence = state.next_sequence++;
  exclusive.started(request.sequence);
  CallRecording recording(state, request);
  try {
    run_claimed(state, request, options, recording);
  } catch (const std::exception& error) {
    recording.failed(error);
    throw;
  }
  recording.finished();
}

void run_numbered_collective(CommunicatorState& state, Request& request,
                             const CommonOptions& options) {
  ExclusiveUse exclusive(state, request.kind);
  exclusive.started(request.sequence);
  CallRecording recording(state, request, CallRecording::Issued::kQueued);
  try {
    run_claimed(state, request, options, recording);
  } catch (const std::exception& error) {
    recording.failed(error);
    throw;
  }
  recording.finished();
}

void check_arguments(const CommunicatorState& state, Request request,
                     const CommonOptions& options) {
  apply_options(request, options, env_params());
  validate_request(request, state.rank, state.size);
}

Algorithm resolve_algorithm(const CommunicatorState& state, Request request,
                            const CommonOptions& options) {
  apply_options(request, options, env_params());
  request.sequence = state.next_sequence;
  request.memory = gpu::resolve_memory_kind(request, state.rank);
  return select_algorithm(request, state).algorithm->id();
}

// Persistent plans (api/prepared_call.h).

std::uint64_t plan_fingerprint_tag(std::uint64_t call_tag, std::uint64_t created_as) {
  // A fixed odd multiplier spreads consecutive creation numbers over the
  // whole tag, so that no caller's small tag equals another plan's.
  return call_tag ^ ((created_as + 1) * 0x9E3779B97F4A7C15ULL);
}

namespace {

// prepare_call's work, after it claimed the communicator and took its
// sequence number.
PreparedCall create_plan(CommunicatorState& state, Request& request, const CommonOptions& options,
                         CallRecording& recording) {
  const EnvParams& params = require_usable(state, [&] { return request.label() + " (plan)"; });
  PreparedCall prepared;
  prepared.created_as = request.sequence;
  const OwnChecks checks = check_and_select(state, request, options, params);
  const std::exception_ptr& rejection = checks.rejection;
  const bool unsupported = checks.unsupported;
  const std::string& rejection_cause = checks.rejection_cause;
  if (checks.selection) {
    prepared.algorithm = checks.selection->algorithm;
    recording.algorithm(prepared.algorithm->id(), request.requested);
  }
  if (request.timeout.count() <= 0) request.timeout = params.timeout;
  request.deadline = coarse_now() + request.timeout;
  recording.started(request);
  // Creation's own check, always made (even with COLLECTIVE_VALIDATE=0,
  // where the starts carry none): every rank must hold the same plan.
  if (state.size > 1) {
    CallFingerprint mine =
        rejection ? rejected_fingerprint(request, state.rank, unsupported, rejection_cause)
                  : fingerprint_of(request, prepared.algorithm->id(), state.rank);
    mine.call_tag = plan_fingerprint_tag(mine.call_tag, prepared.created_as);
    try {
      check_across_ranks(mine, request, state);
    } catch (const CommunicationError& error) {
      state.poison(error);
      record_communication_failure(error.what());
      throw;
    }
  }
  if (rejection) std::rethrow_exception(rejection);
  prepared.fingerprint = fingerprint_of(request, prepared.algorithm->id(), state.rank);
  prepared.fingerprint.call_tag =
      plan_fingerprint_tag(prepared.fingerprint.call_tag, prepared.created_as);
  request.deadline = {};
  prepared.request = request;
  return prepared;
}

}  // namespace

PreparedCall prepare_call(CommunicatorState& state, Request request, const CommonOptions& options) {
  if (mpi_thread_level() < MPI_THREAD_MULTIPLE) {
    // Before the plan takes a sequence number: no rank's creation counts.
    throw InvalidArgumentError(
        std::string(to_string(request.kind)) + "_init", state.rank,
        std::string("a plan needs MPI_THREAD_MULTIPLE, MPI was initialised at ") +
            mpi_thread_level_name(mpi_thread_level()) +
            ": its starts run on the library's progress thread. Initialise MPI with "
            "MPI_THREAD_MULTIPLE (collective::Environment does), or use the blocking call");
  }
  ExclusiveUse exclusive(state, request.kind);
  request.sequence = state.next_sequence++;
  exclusive.started(request.sequence);
  // Recorded as a call of its own ("<collective>_init"): a rank that hangs
  // or fails in the creation's check shows there in the flight record.
  CallRecording recording(state, request, CallRecording::Issued::kPlanCreation);
  try {
    PreparedCall prepared = create_plan(state, request, options, recording);
    recording.finished();
    return prepared;
  } catch (const std::exception& error) {
    recording.failed(error);
    throw;
  }
}

void run_prepared_call(CommunicatorState& state, const PreparedCall& prepared,
                       std::uint64_t sequence) {
  Request request = prepared.request;
  request.sequence = sequence;
  ExclusiveUse exclusive(state, request.kind);
  exclusive.started(sequence);
  CallRecording recording(state, request, CallRecording::Issued::kQueued);
  try {
    const EnvParams& params = require_usable(state, [&] { return request.label(); });
    recording.algorithm(prepared.algorithm->id(), request.requested);
    request.deadline = coarse_now() + request.timeout;
    recording.started(request);
    try {
      // The creation's fingerprint with this start's number: nothing to
      // validate, select or describe again.
      CallFingerprint mine = prepared.fingerprint;
      mine.sequence = sequence;
      if (params.validate && state.size > 1) {
        if (prepared.algorithm->carries_check(request, state)) {
          request.carried_check = &mine;
        } else {
          const TraceScope traced("cross-rank check");
          check_across_ranks(mine, request, state);
        }
      }
      state.last_algorithm = prepared.algorithm->id();
      if (state.size == 1) {
        run_single_rank(request, state.rank);
      } else {
        const TraceScope traced(trace_enabled() ? prepared.algorithm->name() : "");
        // A resource shortage (ResourceUnavailable) is raised as is: the
        // plan was made for this algorithm, and every rank learns of the
        // shortage in the same step (docs/errors.md, "Calls in flight").
        prepared.algorithm->run(request, state);
      }
    } catch (const CommunicationError& error) {
      state.poison(error);
      record_communication_failure(error.what());
      throw;
    }
  } catch (const std::exception& error) {
    recording.failed(error);
    throw;
  }
  recording.finished();
}

}  // namespace collective::internal
