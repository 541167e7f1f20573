// Per-iteration times reduced the way nccl-tests reports them: for each
// iteration the slowest rank's time (the collective is done only when the
// last rank is), then the mean over iterations, and the median and 99th
// percentile of the same per-iteration times.
#pragma once

#include <mpi.h>

#include <vector>

namespace collective::bench {

struct TimeStats {
  double mean_us = 0;
  double p50_us = 0;
  double p99_us = 0;
};

// Statistics of per-iteration seconds (nearest-rank percentiles).
TimeStats summarize(std::vector<double> seconds);

// MPI_MAX of each iteration's seconds across `comm`, then summarize. The
// same result on every rank. Collective: every rank passes as many times.
TimeStats slowest_rank_stats(const std::vector<double>& seconds, MPI_Comm comm);

// Bytes per second in GB/s (1 GB = 1e9 bytes); 0 when the time is 0.
double gigabytes_per_second(double bytes, double microseconds);

}  // namespace collective::bench
