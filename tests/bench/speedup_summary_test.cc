// The footer's speed-up over MPI: AUTO's rows and the forced algorithms'
// apart, the median and the worst with where it was measured, and the exact
// lines the table prints.
#include <gtest/gtest.h>

#include <sstream>

#include "report.h"
#include "speedup_summary.h"

namespace collective::bench {
namespace {

// One all_reduce float32 sum row; each placement ran `ran` and has the given
// speed-up over MPI (none: no baseline).
SizeRow row(std::size_t bytes, Algorithm requested, Algorithm ran, std::optional<double> out,
            std::optional<double> in) {
  SizeRow r;
  r.bytes = bytes;
  r.count = bytes / 4;
  r.element_bytes = 4;
  r.op = ReduceOp::kSum;
  r.requested = requested;
  for (auto [p, speedup, in_place] :
       {std::tuple{&r.out_of_place, out, false}, std::tuple{&r.in_place, in, true}}) {
    p->measured = true;
    p->in_place = in_place;
    p->algorithm = ran;
    if (speedup) {
      BaselineResult baseline;
      baseline.speedup = *speedup;
      p->baseline = baseline;
    }
  }
  return r;
}

const auto kAuto = Algorithm::kAuto;
const auto kRing = Algorithm::kRing;
const auto kShm = Algorithm::kSharedMemory;

TEST(SpeedupSummary, AutoRowsApartFromForcedOnes) {
  const std::vector<SizeRow> rows = {
      row(8, kAuto, kShm, 1.5, 1.25),      row(8, kRing, kRing, 0.25, 0.5),
      row(64, kAuto, kShm, 0.875, 2.0),    row(64, kRing, kRing, 0.125, 0.75),
      row(4096, kAuto, kRing, 1.125, 1.0), row(4096, kRing, kRing, 3.0, 0.5),
  };
  const auto automatic = summarize_speedups(rows, true);
  ASSERT_TRUE(automatic);
  EXPECT_EQ(automatic->measured, 6u);
  // 0.875 1.0 1.125 1.25 1.5 2.0: the mean of the middle two.
  EXPECT_EQ(automatic->median, (1.125 + 1.25) / 2);
  EXPECT_EQ(automatic->worst, 0.875);
  EXPECT_EQ(automatic->worst_bytes, 64u);
  EXPECT_FALSE(automatic->worst_in_place);
  EXPECT_EQ(automatic->worst_algorithm, kShm);
  EXPECT_EQ(describe(*automatic),
            "median 1.188, worst 0.875 at 64 B (all_reduce float32 sum out-of-place, ran "
            "shared_memory)");

  const auto forced = summarize_speedups(rows, false);
  ASSERT_TRUE(forced);
  EXPECT_EQ(forced->measured, 6u);
  EXPECT_EQ(forced->median, 0.5);  // 0.125 0.25 0.5 0.5 0.75 3.0
  EXPECT_EQ(forced->worst, 0.125);
  EXPECT_EQ(forced->worst_bytes, 64u);
  EXPECT_EQ(describe(*forced),
            "median 0.500, worst 0.125 at 64 B (all_reduce float32 sum out-of-place, ran ring)");
}

TEST(SpeedupSummary, OddCountFirstWorstAndPlacementsWithoutSpeedup) {
  std::vector<SizeRow> rows = {
      row(0, kAuto, kShm, 0.0, 0.0),  // our time 0: no speed-up to count
      row(1 << 20, kAuto, kRing, 1.5, 0.5),
      row(2 << 20, kAuto, kRing, std::nullopt, 0.5),  // first 0.5 wins
      row(4 << 20, kAuto, kRing, 4.0, 8.0),
  };
  rows[2].out_of_place.measured = false;  // broadcast-like: no out-of-place form
  rows[3].collective = CollectiveKind::kBroadcast;
  const auto automatic = summarize_speedups(rows, true);
  ASSERT_TRUE(automatic);
  EXPECT_EQ(automatic->measured, 5u);
  EXPECT_EQ(automatic->median, 1.5);  // 0.5 0.5 1.5 4.0 8.0
  EXPECT_EQ(automatic->worst, 0.5);
  EXPECT_EQ(automatic->worst_bytes, std::size_t{1} << 20);
  EXPECT_TRUE(automatic->worst_in_place);
  EXPECT_EQ(describe(*automatic),
            "median 1.500, worst 0.500 at 1 MiB (all_reduce float32 sum in-place, ran ring)");

  SpeedupSummary no_op = *automatic;
  no_op.worst_collective = CollectiveKind::kBroadcast;
  no_op.worst_op.reset();
  no_op.worst_bytes = 3000;
  EXPECT_EQ(describe(no_op),
            "median 1.500, worst 0.500 at 3000 B (broadcast float32 in-place, ran ring)");

  EXPECT_FALSE(summarize_speedups(rows, false));  // no forced rows
  EXPECT_FALSE(summarize_speedups({row(8, kAuto, kShm, std::nullopt, std::nullopt)}, true));
  EXPECT_FALSE(summarize_speedups({}, true));
}

std::string footer(const RunSummary& summary) {
  std::ostringstream out;
  make_table_reporter(out)->end(summary);
  return out.str();
}

TEST(SpeedupSummary, TableFooterNamesAutoFirstAndForcedApart) {
  const std::vector<SizeRow> rows = {
      row(8, kAuto, kShm, 1.5, 1.25),
      row(8, kRing, kRing, 0.25, 0.5),
  };
  RunSummary summary;
  summary.avg_busbw_gbs = 1.5;
  summary.avg_baseline_busbw_gbs = 0.75;
  summary.auto_speedup = summarize_speedups(rows, true);
  summary.forced_speedup = summarize_speedups(rows, false);
  EXPECT_EQ(footer(summary),
            "# Out of bounds values : 0 OK\n"
            "# Avg bus bandwidth    : 1.5\n"
            "# Avg MPI bus bandwidth: 0.75\n"
            "# AUTO speed-up over MPI: median 1.375, worst 1.250 at 8 B (all_reduce float32 sum "
            "in-place, ran shared_memory)\n"
            "# Forced algorithms (-a) speed-up over MPI: median 0.375, worst 0.250 at 8 B "
            "(all_reduce float32 sum out-of-place, ran ring)\n"
            "#\n");

  // Without a baseline: neither line.
  RunSummary plain;
  plain.avg_busbw_gbs = 2;
  EXPECT_EQ(footer(plain), "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 2\n#\n");
}

}  // namespace
}  // namespace collective::bench
