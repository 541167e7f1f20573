// The per-rank trace (COLLECTIVE_TRACE=DIR): Chrome trace-event JSON that
// Perfetto and chrome://tracing open, one slice per collective with nested
// slices for its phases (docs/performance.md, "Flight recorder and
// trace"). Off, a scope costs one load of a process-wide flag. On, a slice
// is a fixed-size event appended under a mutex; a writer thread formats
// and writes them in batches, and the rest at exit.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/request.h"

namespace collective::internal {

namespace trace_detail {
extern std::atomic<bool> enabled;
}  // namespace trace_detail

inline bool trace_enabled() { return trace_detail::enabled.load(std::memory_order_relaxed); }

// Starts the trace when COLLECTIVE_TRACE names a directory (once; the
// world rank names the file DIR/collective_trace.<rank>.json).
void start_trace_if_requested();

std::int64_t trace_now_ns();

// Appends one complete slice. `name` and `category` must be static
// strings; `detail` (may be null) is copied into the event's args.
void trace_slice(const char* name, const char* category, std::int64_t start_ns, std::int64_t end_ns,
                 const char* detail);

// A slice for the scope it lives in, when the trace is on.
class TraceScope {
 public:
  TraceScope(const char* name, const char* category = "phase")
      : name_(name), category_(category), start_ns_(trace_enabled() ? trace_now_ns() : 0) {}
  ~TraceScope() {
    if (start_ns_ != 0) trace_slice(name_, category_, start_ns_, trace_now_ns(), nullptr);
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  const char* name_;
  const char* category_;
  std::int64_t start_ns_;
};

// Writes what is buffered and closes the JSON array (at exit; idempotent).
void finish_trace();

}  // namespace collective::internal
