// The footer's speed-up over MPI, for AUTO's rows (what a program gets) and,
// apart, for the rows of algorithms forced with -a.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "results.h"

namespace collective::bench {

// Over the placements of `rows` that have a baseline, those requested as
// AUTO (auto_rows) or the others; std::nullopt when there are none.
std::optional<SpeedupSummary> summarize_speedups(const std::vector<SizeRow>& rows, bool auto_rows);

// "median 1.180, worst 0.912 at 64 B (all_reduce float32 sum in-place, ran ring)".
std::string describe(const SpeedupSummary& speedup);

}  // namespace collective::bench
