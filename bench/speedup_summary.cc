#include "speedup_summary.h"

#include <algorithm>
#include <cstdio>

#include "byte_size.h"

namespace collective::bench {

std::optional<SpeedupSummary> summarize_speedups(const std::vector<SizeRow>& rows, bool auto_rows) {
  SpeedupSummary summary;
  std::vector<double> speedups;
  for (const SizeRow& row : rows) {
    if ((row.requested == Algorithm::kAuto) != auto_rows) continue;
    for (const PlacementResult* p : {&row.out_of_place, &row.in_place}) {
      // No speed-up where our median time is 0 (nothing to compare).
      if (!p->measured || !p->baseline || p->baseline->speedup <= 0) continue;
      const double speedup = p->baseline->speedup;
      if (speedups.empty() || speedup < summary.worst) {
        summary.worst = speedup;
        summary.worst_collective = row.collective;
        summary.worst_type = row.type;
        summary.worst_op = row.op;
        summary.worst_bytes = row.bytes;
        summary.worst_in_place = p->in_place;
        summary.worst_algorithm = p->algorithm;
      }
      speedups.push_back(speedup);
    }
  }
  if (speedups.empty()) return std::nullopt;
  std::sort(speedups.begin(), speedups.end());
  const std::size_t n = speedups.size();
  summary.measured = n;
  summary.median = n % 2 == 1 ? speedups[n / 2] : (speedups[n / 2 - 1] + speedups[n / 2]) / 2;
  return summary;
}

std::string describe(const SpeedupSummary& speedup) {
  char numbers[64];
  std::snprintf(numbers, sizeof(numbers), "median %.3f, worst %.3f at ", speedup.median,
                speedup.worst);
  std::string text = numbers;
  text.append(format_byte_size(speedup.worst_bytes)).append(" (");
  text.append(to_string(speedup.worst_collective)).append(" ");
  text.append(to_string(speedup.worst_type));
  if (speedup.worst_op) text.append(" ").append(to_string(*speedup.worst_op));
  text.append(speedup.worst_in_place ? " in-place" : " out-of-place");
  text.append(", ran ").append(to_string(speedup.worst_algorithm)).append(")");
  return text;
}

}  // namespace collective::bench
