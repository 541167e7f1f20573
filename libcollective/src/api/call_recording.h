// What dispatch tells the diagnosis tools about one call: its flight
// record (core/flight_recorder.h), the dump when it fails in a way that
// leaves ranks out of step, and its slice in the trace.
#pragma once

#include <cstdint>
#include <exception>

#include "collective/algorithm.h"
#include "core/communicator_state.h"
#include "core/flight_recorder.h"
#include "core/request.h"
#include "core/trace.h"

namespace collective::internal {

class CallRecording {
 public:
  // Whether the call was queued (an `_async` call or a plan's start,
  // recorded as queued when it was issued), is a blocking one, or is a
  // plan's creation (blocking, recorded as "<collective>_init").
  enum class Issued : std::uint8_t { kBlocking, kQueued, kPlanCreation };

  // After the call claimed the communicator and took its sequence number.
  // Inline, like the three below: they run on every call.
  CallRecording(CommunicatorState& state, const Request& request, Issued issued = Issued::kBlocking)
      : state_(state), request_(request), poisoned_before_(state.poisoned.has_value()) {
    if (state.flight_recorder) {
      record_ = issued == Issued::kQueued
                    ? state.flight_recorder->begin_queued(request)
                    : &state.flight_recorder->begin(request, issued == Issued::kPlanCreation);
    }
    if (trace_enabled()) trace_start_ns_ = trace_now_ns();
  }
  // Its deadline is set: the start time is deadline - timeout.
  void started(const Request& request) {
    if (record_ != nullptr) FlightRecorder::set_start(*record_, request.deadline - request.timeout);
  }
  void algorithm(Algorithm ran, Algorithm requested) {
    ran_ = ran;
    if (record_ != nullptr) FlightRecorder::set_algorithm(*record_, ran, requested);
  }
  void finished() {
    if (record_ != nullptr) FlightRecorder::finish(*record_);
    if (trace_start_ns_ != 0) trace("");
  }
  // Records the failure; dumps every communicator's record for a timeout,
  // a communication failure or an abort that poisons the communicator now,
  // and for a MismatchError (the cross-rank check).
  void failed(const std::exception& error);

 private:
  void trace(const char* outcome);

  CommunicatorState& state_;
  const Request& request_;
  FlightRecord* record_ = nullptr;
  bool poisoned_before_;
  std::int64_t trace_start_ns_ = 0;  // 0: the trace is off
  Algorithm ran_ = Algorithm::kAuto;
};

}  // namespace collective::internal
