#include "api/call_recording.h"

#include "collective/errors.h"

namespace collective::internal {

CallRecording::CallRecording(CommunicatorState& state, const Request& request)
    : state_(state), poisoned_before_(state.poisoned.has_value()) {
  if (state.flight_recorder) record_ = &state.flight_recorder->begin(request);
}

void CallRecording::started(const Request& request) {
  if (record_ != nullptr) FlightRecorder::set_start(*record_, request.deadline - request.timeout);
}

void CallRecording::algorithm(Algorithm ran, Algorithm requested) {
  if (record_ != nullptr) FlightRecorder::set_algorithm(*record_, ran, requested);
}

void CallRecording::finished() {
  if (record_ != nullptr) FlightRecorder::finish(*record_);
}

void CallRecording::failed(const std::exception& error) {
  if (record_ == nullptr) return;
  FlightRecorder::fail(*record_, error.what());
  const bool newly_poisoned = !poisoned_before_ &&
                              dynamic_cast<const CommunicationError*>(&error) != nullptr;
  const bool mismatch = dynamic_cast<const MismatchError*>(&error) != nullptr;
  if (newly_poisoned || mismatch) dump_flight_records_noexcept(error.what());
}

}  // namespace collective::internal
