// Diagnosis of hangs and slow calls: the flight recorder's dump on demand
// (docs/errors.md, "Flight recorder") and slices of the caller's own in
// the per-rank trace (COLLECTIVE_TRACE; docs/performance.md, "Flight
// recorder and trace").
#pragma once

#include <cstdint>
#include <string>

#include "collective/export.h"

namespace collective {

// Writes the flight record of this process (the last calls of every live
// communicator, COLLECTIVE_FLIGHT_RECORDER of them each) to
// `<directory>/collective_flight_record.<world rank>.json`, the format of
// docs/errors.md, "The dump format", and returns the path. An empty
// directory means COLLECTIVE_FLIGHT_RECORDER_DIR, else the working
// directory. Local (no other rank takes part) and safe while another
// thread runs a collective. Throws CommunicationError when the file cannot
// be written, InvalidArgumentError when MPI is not initialized.
COLLECTIVE_API std::string dump_flight_record(const std::string& directory = "");

// Whether SIGUSR1 dumps the flight record when COLLECTIVE_FLIGHT_RECORDER_SIGNAL
// is unset (true unless changed): with the first communicator the library
// then installs a SIGUSR1 handler and starts one watcher thread. For an
// embedder that must leave a program's signals and threads as they were
// (the MPI drop-in sets false); the variable, when set, wins. Takes effect
// only before the process's first communicator.
COLLECTIVE_API void set_flight_recorder_signal_default(bool dump_on_sigusr1);

// A slice of the per-rank trace (COLLECTIVE_TRACE) around the scope it
// lives in, on the calling thread's track, with the library's own slices of
// the collectives called inside it nested below. Layers above the library
// (the strategies' replica function, batch_reduce, packing) mark their
// phases with it. `name` and `category` must outlive the program (string
// literals); `detail` is copied into the slice's args. When the trace is
// off a slice costs one load of a flag.
class COLLECTIVE_API TraceSlice {
 public:
  explicit TraceSlice(const char* name, const char* category = "user",
                      const std::string& detail = {});
  ~TraceSlice();
  TraceSlice(const TraceSlice&) = delete;
  TraceSlice& operator=(const TraceSlice&) = delete;

  // Whether COLLECTIVE_TRACE is writing a trace in this process (it starts
  // with the first communicator).
  static bool enabled();

 private:
  const char* name_;
  const char* category_;
  std::string detail_;
  std::int64_t start_ns_;
};

}  // namespace collective
