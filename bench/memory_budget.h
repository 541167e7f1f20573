// Runs whose buffers cannot fit are refused before anything is allocated
// (a size near 2^64 once wrapped around into a tiny buffer and a segfault;
// --fusion 1000000000 ran into the OOM killer).
//
// The rule: what one rank allocates itself - the send and receive buffers
// of the largest size, a row of the plan and report per size and algorithm (for --fusion: five
// copies of every tensor, the inputs, both results and batch_reduce's packed input and output, plus
// 512 B of bookkeeping per tensor), and the per-iteration timings - must
// fit in its share of the node's memory: physical memory (or the cgroup's
// memory.max when lower) divided by the ranks on that node. The library's
// own scratch comes on top, so a run just under the rule may still be
// tight; the rule catches the sizes that can never work.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>
#include <string>

#include "bench_options.h"
#include "shared_cases.h"
#include "results.h"

namespace collective::bench {

struct MemoryNeed {
  std::optional<std::size_t> bytes;  // nullopt: more than 2^64 - 1
  std::string what;                  // which part of the run needs the most
};

// What the run keeps per size and algorithm besides its buffers: the row of
// the report (kept for the summary and the writers) and the plan's step (a
// geometry and its list of algorithms, with the allocator's overhead).
inline constexpr std::size_t kBytesPerSweepRow = sizeof(SizeRow) + sizeof(Geometry) + 64;
inline constexpr std::size_t kBytesPerFusionRow = sizeof(FusionRow) + 64;

// The most one rank allocates for the run, at `ranks` ranks: the buffers of
// the largest size, the timings, and a row per size and algorithm. Pure,
// and allocates nothing in proportion to the number of sizes.
MemoryNeed memory_needed_per_rank(const BenchOptions& options, int ranks);
// The buffers and timings alone, for a sweep whose largest size is
// `largest`.
MemoryNeed buffers_needed_per_rank(const BenchOptions& options, int ranks, std::size_t largest);

// This node's memory divided by its ranks, the smallest over every rank of
// `comm` (collective), so that every rank reaches the same verdict.
std::size_t memory_budget_per_rank(MPI_Comm comm);

// Throws BenchError (exit 2) on every rank alike when the run cannot fit.
void refuse_runs_that_cannot_fit(const BenchOptions& options, MPI_Comm comm);

}  // namespace collective::bench
