#include "api/call_recording.h"

#include <cstdio>

#include "collective/errors.h"
#include "core/trace.h"

namespace collective::internal {

// One slice per collective: "all_reduce", with the call's arguments.
void CallRecording::trace(const char* outcome) {
  char detail[96];
  std::snprintf(detail, sizeof(detail), "#%llu count=%zu %s %s %s%s",
                static_cast<unsigned long long>(request_.sequence), request_.count,
                to_string(request_.type).data(), to_string(request_.op).data(),
                to_string(ran_).data(), outcome);
  trace_slice(to_string(request_.kind).data(), "collective", trace_start_ns_, trace_now_ns(),
              detail);
}

void CallRecording::failed(const std::exception& error) {
  if (trace_start_ns_ != 0) trace(" failed");
  if (record_ == nullptr) return;
  state_.flight_recorder->fail(*record_, error.what());
  const bool newly_poisoned =
      !poisoned_before_ && dynamic_cast<const CommunicationError*>(&error) != nullptr;
  const bool mismatch = dynamic_cast<const MismatchError*>(&error) != nullptr;
  if (newly_poisoned || mismatch) dump_flight_records_noexcept(error.what());
}

}  // namespace collective::internal
