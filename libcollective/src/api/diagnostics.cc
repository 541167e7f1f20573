#include "collective/diagnostics.h"

#include "core/flight_recorder.h"
#include "core/mpi_lifetime.h"
#include "core/trace.h"

namespace collective {

std::string dump_flight_record(const std::string& directory) {
  internal::require_mpi_running("dump_flight_record", -1);
  return internal::dump_flight_records(directory, "dump_flight_record (on demand)");
}

void set_flight_recorder_signal_default(bool dump_on_sigusr1) {
  internal::set_signal_default(dump_on_sigusr1);
}

TraceSlice::TraceSlice(const char* name, const char* category, const std::string& detail)
    : name_(name),
      category_(category),
      start_ns_(internal::trace_enabled() ? internal::trace_now_ns() : 0) {
  if (start_ns_ != 0) detail_ = detail;
}

TraceSlice::~TraceSlice() {
  if (start_ns_ == 0) return;
  internal::trace_slice(name_, category_, start_ns_, internal::trace_now_ns(),
                        detail_.empty() ? nullptr : detail_.c_str());
}

bool TraceSlice::enabled() { return internal::trace_enabled(); }

}  // namespace collective
