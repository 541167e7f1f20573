// The shared driver: sweeps collectives x types x ops x sizes x algorithms,
// checks each call apart from the timed ones, times ours (and the MPI
// baseline, alternating iteration by iteration), and hands rows to the
// reporter. fusion.h and rules_file.h build on it.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "aligned_buffer.h"
#include "bench_options.h"
#include "device_buffer.h"
#include "collective/communicator.h"
#include "mpi_baseline.h"
#include "mpi_counterparts.h"
#include "progress.h"
#include "report.h"
#include "results.h"

namespace collective::bench {

// A run that cannot go on (an algorithm that cannot serve a call, a size
// MPI cannot express, a root outside the communicator). Raised on every
// rank alike, before any call it concerns.
class BenchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Which side of the run produced a result: the library or --baseline mpi.
enum class Implementation { kLibrary, kMpi };

struct BenchContext {
  const BenchOptions& options;
  Communicator& communicator;
  const MpiBaseline& mpi;
  Reporter* reporter = nullptr;  // rank 0 only
  Progress& progress;
};

// Corrupts one result element, once per run, on one rank (--inject-error).
class ErrorInjector {
 public:
  explicit ErrorInjector(bool enabled) : pending_(enabled) {}
  // Corrupts region[count / 2] when still pending and `rank_holds` is true.
  void maybe_corrupt(DataType type, Region region, bool rank_holds);

 private:
  bool pending_;
};

// Prints a rank's wrong elements to stderr (every rank reports its own).
void report_wrong(const WrongElements& wrong, int rank, const std::string& what);

// The algorithms to run for a call: the requested ones (each must support
// it, else BenchError), or with -a all every algorithm that does.
std::vector<Algorithm> algorithms_for(const BenchContext& context, CollectiveKind kind,
                                      std::size_t count, DataType type);

// -r/--root must be a rank of the run for a rooted collective (BenchError).
void require_root_in_run(const BenchOptions& options, const CollectiveCase& c, int ranks);

// The reduce ops to run a collective on `type` with: -o's that apply to
// the type for a reducing one (the bitwise ops: integer types only), else
// one entry without an op.
std::vector<std::optional<ReduceOp>> ops_for(const BenchOptions& options, const CollectiveCase& c,
                                             DataType type);

// Sizes rounded as the collective rounds them, duplicates removed.
std::vector<Geometry> geometries_for(const BenchOptions& options, const CollectiveCase& c,
                                     std::size_t element_bytes, const cases::Shape& shape);

// One timed iteration: barrier, then the call, on this rank's clock.
double timed_seconds(MPI_Comm comm, const auto& call) {
  MPI_Barrier(comm);
  const double start = MPI_Wtime();
  call();
  return MPI_Wtime() - start;
}

class SweepDriver {
 public:
  explicit SweepDriver(BenchContext& context)
      : context_(context), injector_(context.options.inject_error) {}

  // Runs the whole sweep; rows go to the reporter as they are measured.
  void run();
  const std::vector<SizeRow>& rows() const { return rows_; }

 private:
  SizeRow measure(const CollectiveCase& c, const Geometry& geometry, DataType type,
                  std::optional<ReduceOp> op, Algorithm algorithm);
  PlacementResult measure_placement(const CollectiveCase& c, const Geometry& geometry,
                                    CallArgs args, bool in_place);
  std::uint64_t check_once(const CollectiveCase& c, const Geometry& geometry, const CallArgs& args,
                           Implementation implementation);
  bool on_device() const { return context_.options.memory == BufferMemory::kDevice; }
  // The same call over the host buffers: where the bench writes inputs and
  // reads results (with --memory device, the mirrors of the device ones).
  CallArgs on_host(const CollectiveCase& c, const CallArgs& args) const;
  // --memory device: the host mirrors to the device buffers, and back.
  void upload(const Geometry& geometry, DataType type);
  void download(const Geometry& geometry, DataType type);

  BenchContext& context_;
  ErrorInjector injector_;
  AlignedBuffer send_;  // the call's buffers, or with --memory device their mirrors
  AlignedBuffer recv_;
  DeviceBuffer device_send_;  // --memory device only
  DeviceBuffer device_recv_;
  std::vector<SizeRow> rows_;
};

// Totals over rows: wrong elements, average bus bandwidths, speed-ups over MPI
// (AUTO's and the forced algorithms', apart).
RunSummary summarize_rows(const std::vector<SizeRow>& rows, const BenchOptions& options);

}  // namespace collective::bench
