// --nonblocking: OSU's overlap measure (osu_iallreduce, osu_ibcast, ...) for
// each -C collective, the library's `_async` call (the case's start();
// barrier_async) beside MPI's nonblocking counterpart (mpi_nonblocking.h)
// in the same run, alternating iteration by iteration. Per collective,
// type, op and size, on the blocking sweep's geometry (the cases'), out of
// place where the collective has that form (broadcast: in place), per side:
//   t_call     start + wait alone
//   t_compute  a busy loop calibrated to last t_call, alone
//   t_total    start, the busy loop, wait
//   overlap %  100 * (1 - (t_total - t_compute) / t_call), clamped to 0..100:
//              how much of the call the computation hid.
// Times are the slowest rank's per iteration, medians over iterations. The
// last overlapped call of each side is checked element by element, as the
// blocking sweep checks its calls. The MPI side's progress is whatever the
// MPI library makes while the program computes without calling it (Open
// MPI 4.1: none of its own).
#pragma once

#include "driver.h"

namespace collective::bench {

// Overlap as OSU computes it, in percent, clamped to 0..100; 0 when the
// call took no time.
double overlap_percent(double call_us, double compute_us, double total_us);

// Runs the overlap sweep of context.options (nonblocking), reporting per
// collective a titled table with one line per type, op and size as notes,
// and returns the totals (wrong elements of the checked calls). Refuses
// (BenchError) what cannot run before the first call.
RunSummary run_overlap(BenchContext& context);

}  // namespace collective::bench
