#include "time_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace collective::bench {
namespace {

double nearest_rank(const std::vector<double>& sorted, double fraction) {
  const auto n = static_cast<double>(sorted.size());
  const auto rank = static_cast<std::size_t>(std::max(1.0, std::ceil(fraction * n)));
  return sorted[std::min(rank, sorted.size()) - 1];
}

}  // namespace

TimeStats summarize(std::vector<double> seconds) {
  TimeStats stats;
  if (seconds.empty()) return stats;
  std::sort(seconds.begin(), seconds.end());
  const double total = std::accumulate(seconds.begin(), seconds.end(), 0.0);
  stats.mean_us = total / static_cast<double>(seconds.size()) * 1e6;
  stats.p50_us = nearest_rank(seconds, 0.50) * 1e6;
  stats.p99_us = nearest_rank(seconds, 0.99) * 1e6;
  return stats;
}

TimeStats slowest_rank_stats(const std::vector<double>& seconds, MPI_Comm comm) {
  std::vector<double> slowest(seconds.size());
  MPI_Allreduce(seconds.data(), slowest.data(), static_cast<int>(seconds.size()), MPI_DOUBLE,
                MPI_MAX, comm);
  return summarize(std::move(slowest));
}

double gigabytes_per_second(double bytes, double microseconds) {
  if (microseconds <= 0) return 0;
  return bytes / (microseconds * 1e-6) / 1e9;
}

}  // namespace collective::bench
