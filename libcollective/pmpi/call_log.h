// COLLECTIVE_PMPI_LOG: which calls the drop-in served and which it passed
// to PMPI_, and why. Unset or 0: silent. 1: one summary per rank at
// MPI_Finalize. 2: that, plus one line per call.
#pragma once

#include <atomic>
#include <string>

#include "intercept_table.h"

namespace collective::pmpi {

const char* mpi_name(Intercepted call, Form form = Form::kBlocking);

// Records a served call (`algorithm`: the one libcollective ran; "in
// flight" for a started one, counted once it finished).
void log_served(Intercepted call, int rank, const char* algorithm, Form form = Form::kBlocking);
// Records a call passed to PMPI_ and the rule that sent it there.
void log_passed(Intercepted call, int rank, const char* reason, Form form = Form::kBlocking);
// Records a call libcollective took but failed (reported through the
// communicator's error handler, or a started call's request).
void log_failed(Intercepted call, int rank, Form form = Form::kBlocking);
// Writes this rank's summary (at level >= 1) and resets the counts.
void log_summary(int rank);
// The COLLECTIVE_PMPI_LOG level (0 when unset), read once; later calls
// read one integer.
extern std::atomic<int> log_level_read;  // -1 until read
int read_log_level();
inline int log_level() {
  const int level = log_level_read.load(std::memory_order_relaxed);
  return level >= 0 ? level : read_log_level();
}

}  // namespace collective::pmpi
