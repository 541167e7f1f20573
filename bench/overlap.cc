#include "overlap.h"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "byte_size.h"
#include "collective/work.h"
#include "mpi_nonblocking.h"
#include "shared_cases.h"
#include "time_stats.h"

namespace collective::bench {
namespace {

// The computation overlapped with the call: steps the compiler must keep.
// Never inlined: calibrated and timed, it must be the same machine code (a
// copy inlined elsewhere once ran at half the speed, on the same core).
[[gnu::noinline]] void busy(std::uint64_t steps) {
  volatile std::uint64_t sink = 0;
  for (std::uint64_t i = 0; i < steps; ++i) sink = sink + i;
}

// Busy steps per second on this rank, from a run of at least 20 ms (long
// enough that the clock's resolution and one scheduling hiccup do not
// decide it).
double busy_steps_per_second() {
  std::uint64_t steps = std::uint64_t{1} << 16;
  for (;;) {
    const double start = MPI_Wtime();
    busy(steps);
    const double seconds = MPI_Wtime() - start;
    if (seconds >= 0.02) return static_cast<double>(steps) / seconds;
    steps *= 2;
  }
}

// Steps of busy() lasting `target_us` on this rank: from the run's rate,
// then rescaled by what a few tries took (the rate found at the start drifts
// with the clock frequency and with what else runs on the cores).
std::uint64_t calibrated_steps(double target_us, double steps_per_second) {
  double steps = target_us * 1e-6 * steps_per_second;
  for (int attempt = 0; attempt < 5 && steps >= 1; ++attempt) {
    const double start = MPI_Wtime();
    busy(static_cast<std::uint64_t>(steps));
    const double took_us = (MPI_Wtime() - start) * 1e6;
    if (took_us <= 0) break;
    const double ratio = target_us / took_us;
    steps *= ratio;
    if (ratio > 0.97 && ratio < 1.03) break;
  }
  return static_cast<std::uint64_t>(steps);
}

// One side of the comparison: a call started, then waited for.
class OverlapSide {
 public:
  virtual ~OverlapSide() = default;
  virtual void start() = 0;
  virtual void wait() = 0;
};

// The library's `_async` call (the case's start(); barrier_async for the
// barrier, which has no case), completed by Work::wait.
class LibrarySide final : public OverlapSide {
 public:
  LibrarySide(Communicator& communicator, const CollectiveCase* c, const CallArgs& args)
      : communicator_(communicator), case_(c), args_(args) {}
  void start() override {
    work_ = case_ != nullptr ? case_->start(communicator_, args_) : communicator_.barrier_async();
  }
  void wait() override { work_.wait(); }

 private:
  Communicator& communicator_;
  const CollectiveCase* case_;  // null: barrier
  const CallArgs& args_;
  Work work_;
};

// MPI's nonblocking counterpart on the baseline's communicator.
class MpiSide final : public OverlapSide {
 public:
  MpiSide(CollectiveKind kind, const MpiBaseline& mpi, const CallArgs& args)
      : call_(kind, mpi, args) {}
  void start() override { call_.start(); }
  void wait() override { call_.wait(); }

 private:
  MpiNonblockingCall call_;
};

struct SideTimes {
  double call_us = 0;
  double compute_us = 0;
  double total_us = 0;
  double overlap = 0;
  std::uint64_t compute_steps = 0;
};

// Median of the slowest rank's per-iteration times, in microseconds.
double median_us(const std::vector<double>& seconds, MPI_Comm comm) {
  return slowest_rank_stats(seconds, comm).p50_us;
}

std::string format_row(std::size_t bytes, std::size_t count, const std::string& type,
                       const std::string& op, const SideTimes& ours, const SideTimes& mpi,
                       std::uint64_t wrong) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "%12zu %12zu %8s %6s  %9.1f %9.1f %9.1f %6.1f  %9.1f %9.1f %9.1f %6.1f %6llu",
                bytes, count, type.c_str(), op.c_str(), ours.call_us, ours.compute_us,
                ours.total_us, ours.overlap, mpi.call_us, mpi.compute_us, mpi.total_us, mpi.overlap,
                static_cast<unsigned long long>(wrong));
  return line;
}

// One collective, type and op, over its sizes. The barrier has no case
// and one call, of no elements.
struct OverlapUnit {
  CollectiveKind kind = CollectiveKind::kBarrier;
  const CollectiveCase* c = nullptr;  // null: barrier
  DataType type = DataType::kFloat32;
  std::optional<ReduceOp> op;
  std::vector<Geometry> geometries;
};

// The library's name of the started call (all_reduce_async).
std::string async_name(CollectiveKind kind) { return std::string(to_string(kind)) + "_async"; }

// Plans every unit of the run; everything that can be refused (a root
// outside the run, a size MPI's int counts cannot express, a call AUTO
// cannot serve) is refused here, on every rank alike, before the first call.
std::vector<OverlapUnit> plan_units(const BenchContext& context,
                                    std::vector<std::unique_ptr<CollectiveCase>>& cases) {
  const BenchOptions& options = context.options;
  const int ranks = context.communicator.size();
  const cases::Shape shape{ranks, context.communicator.rank(), options.uneven};
  std::vector<OverlapUnit> units;
  for (CollectiveKind kind : options.collectives) {
    if (kind == CollectiveKind::kBarrier) {
      units.push_back(OverlapUnit{kind, nullptr, DataType::kFloat32, std::nullopt, {Geometry{}}});
      continue;
    }
    cases.push_back(make_collective_case(kind));
    const CollectiveCase& c = *cases.back();
    require_root_in_run(options, c, ranks);
    for (DataType type : options.datatypes) {
      const std::vector<std::optional<ReduceOp>> ops = ops_for(options, c, type);
      const std::vector<Geometry> geometries =
          geometries_for(options, c, element_size(type), shape);
      for (const Geometry& geometry : geometries) {
        if (const char* limit = mpi_limit(c, geometry, shape)) {
          throw BenchError("--nonblocking cannot run " + std::string(mpi_nonblocking_name(kind)) +
                           " at " + std::to_string(geometry.bytes) + " B of " +
                           std::string(to_string(type)) + ": " + limit + "; lower -e");
        }
        // -a auto only (the parser refused others): BenchError where AUTO
        // has nothing that can serve the call.
        algorithms_for(context, kind, geometry.count, type);
      }
      for (const auto& op : ops) units.push_back(OverlapUnit{kind, &c, type, op, geometries});
    }
  }
  return units;
}

// The table's title for a collective: what is compared, and how.
std::string section_title(const OverlapUnit& unit, const BenchOptions& options) {
  std::string title = std::string(to_string(unit.kind)) + ": " + async_name(unit.kind) +
                      " beside " + std::string(mpi_nonblocking_name(unit.kind));
  if (unit.c != nullptr) {
    title += unit.c->has_out_of_place() ? ", out of place" : ", in place";
    if (unit.c->rooted()) title += ", root " + std::to_string(options.root);
  }
  return title;
}

// The sentinel over the result buffer, then the inputs: the state the
// checked call starts from (check_once's, in the blocking sweep).
void prepare_checked_call(const CollectiveCase& c, const Geometry& geometry, const CallArgs& args) {
  fill_sentinel(args.type, Region{args.recv_base, geometry.recv_elements, 0});
  for (const Region& input : c.inputs(args)) fill_inputs(c.pattern(args), args.rank, input);
}

class OverlapRun {
 public:
  explicit OverlapRun(BenchContext& context)
      : context_(context),
        injector_(context.options.inject_error),
        steps_per_second_(busy_steps_per_second()) {}

  // Buffers for the largest size of `unit`.
  void reserve_for(const OverlapUnit& unit) {
    const std::size_t element = element_size(unit.type);
    const Geometry& largest = unit.geometries.back();
    send_.reserve(largest.send_elements * element);
    recv_.reserve(largest.recv_elements * element);
    mpi_recv_.reserve(largest.recv_elements * element);
  }

  // Measures one size of `unit`: its table line, and in `wrong_everywhere`
  // the wrong elements of the checked calls, summed over the ranks.
  std::string measure(const OverlapUnit& unit, const Geometry& geometry,
                      std::uint64_t& wrong_everywhere);

 private:
  BenchContext& context_;
  AlignedBuffer send_;
  AlignedBuffer recv_;
  AlignedBuffer mpi_recv_;  // MPI's result, apart from ours
  ErrorInjector injector_;
  double steps_per_second_;
};

std::string OverlapRun::measure(const OverlapUnit& unit, const Geometry& geometry,
                                std::uint64_t& wrong_everywhere) {
  const BenchOptions& options = context_.options;
  Communicator& communicator = context_.communicator;
  const MPI_Comm comm = context_.mpi.comm();

  // Both sides read the same send buffer and write their own result.
  CallArgs args[2];
  for (int s = 0; s < 2; ++s) {
    CallArgs& a = args[s];
    a.send_base = send_.data();
    a.recv_base = s == 0 ? recv_.data() : mpi_recv_.data();
    a.count = geometry.count;
    a.type = unit.type;
    a.op = unit.op.value_or(ReduceOp::kSum);
    a.root = unit.c != nullptr && unit.c->rooted() ? options.root : 0;
    a.algorithm = Algorithm::kAuto;
    a.deterministic = options.deterministic;
    a.rank = communicator.rank();
    a.ranks = communicator.size();
    a.uneven = options.uneven;
    a.in_place = unit.c != nullptr && !unit.c->has_out_of_place();
    if (unit.c != nullptr) {
      unit.c->place(a);
      for (const Region& input : unit.c->inputs(a)) {
        fill_inputs(unit.c->pattern(a), a.rank, input);
      }
    }
  }
  LibrarySide ours(communicator, unit.c, args[0]);
  MpiSide mpi(unit.kind, context_.mpi, args[1]);
  OverlapSide* sides[2] = {&ours, &mpi};
  SideTimes times[2];

  // The call alone, the two sides alternating.
  std::vector<double> call_seconds[2];
  for (int i = 0; i < options.warmup_iters + options.iters; ++i) {
    for (int s = 0; s < 2; ++s) {
      const double t = timed_seconds(comm, [&] {
        sides[s]->start();
        sides[s]->wait();
      });
      if (i >= options.warmup_iters) call_seconds[s].push_back(t);
    }
    context_.progress.tick();
  }
  for (int s = 0; s < 2; ++s) {
    times[s].call_us = median_us(call_seconds[s], comm);
    times[s].compute_steps = calibrated_steps(times[s].call_us, steps_per_second_);
  }
  // The computation alone, then start + computation + wait.
  std::vector<double> compute_seconds[2], total_seconds[2];
  for (int i = 0; i < options.iters; ++i) {
    for (int s = 0; s < 2; ++s) {
      compute_seconds[s].push_back(timed_seconds(comm, [&] { busy(times[s].compute_steps); }));
    }
  }
  const bool checked = options.check && unit.c != nullptr;
  for (int i = 0; i < options.warmup_iters + options.iters; ++i) {
    for (int s = 0; s < 2; ++s) {
      // The last overlapped call of each side is the one checked.
      if (checked && i == options.warmup_iters + options.iters - 1) {
        prepare_checked_call(*unit.c, geometry, args[s]);
      }
      const double t = timed_seconds(comm, [&] {
        sides[s]->start();
        busy(times[s].compute_steps);
        sides[s]->wait();
      });
      if (i >= options.warmup_iters) total_seconds[s].push_back(t);
    }
    context_.progress.tick();
  }
  std::uint64_t wrong = 0;
  for (int s = 0; s < 2; ++s) {
    times[s].compute_us = median_us(compute_seconds[s], comm);
    times[s].total_us = median_us(total_seconds[s], comm);
    times[s].overlap = overlap_percent(times[s].call_us, times[s].compute_us, times[s].total_us);
    if (!checked) continue;
    const CollectiveCase& c = *unit.c;
    ResultLayout result;
    if (s == 0) {
      result = c.result(args[s]);
      injector_.maybe_corrupt(unit.type, Region{result.data, result.elements(), 0},
                              args[s].rank == c.result_holder(args[s]));
    } else {
      result = mpi_result(c, args[s]);
    }
    const WrongElements w = c.check(args[s], result);
    std::string what =
        (s == 0 ? async_name(unit.kind) : std::string(mpi_nonblocking_name(unit.kind))) + " of " +
        std::to_string(geometry.count) + " " + std::string(to_string(unit.type));
    if (unit.op) what += " " + std::string(to_string(*unit.op));
    report_wrong(w, args[s].rank, what);
    wrong += w.count;
  }
  wrong_everywhere = 0;
  MPI_Allreduce(&wrong, &wrong_everywhere, 1, MPI_UINT64_T, MPI_SUM, comm);
  const std::string type = unit.c != nullptr ? std::string(to_string(unit.type)) : "none";
  return format_row(geometry.bytes, geometry.count, type, op_name(unit.op), times[0], times[1],
                    wrong_everywhere);
}

}  // namespace

double overlap_percent(double call_us, double compute_us, double total_us) {
  if (call_us <= 0) return 0;
  const double hidden = 100.0 * (1.0 - (total_us - compute_us) / call_us);
  return std::clamp(hidden, 0.0, 100.0);
}

RunSummary run_overlap(BenchContext& context) {
  std::vector<std::unique_ptr<CollectiveCase>> cases;
  const std::vector<OverlapUnit> units = plan_units(context, cases);
  std::size_t total = 0;
  for (const OverlapUnit& unit : units) total += unit.geometries.size();

  OverlapRun run(context);
  if (context.reporter) {
    context.reporter->note(
        "overlap (OSU): call = start+wait, compute = busy loop calibrated to the call, total = "
        "start+compute+wait; overlap % = 100*(1-(total-compute)/call); medians in us");
  }
  RunSummary summary;
  std::optional<CollectiveKind> section;
  for (const OverlapUnit& unit : units) {
    if (context.reporter && section != unit.kind) {
      context.reporter->note(section_title(unit, context.options));
      context.reporter->note(
          "        size        count     type  redop  ours:call   compute     total    ovl%"
          "   mpi:call   compute     total    ovl%  wrong");
    }
    section = unit.kind;
    run.reserve_for(unit);
    for (const Geometry& geometry : unit.geometries) {
      context.progress.update(summary.measured, total,
                              "overlap " + std::string(to_string(unit.kind)) + " " +
                                  format_byte_size(geometry.bytes) + " " +
                                  std::string(to_string(unit.type)));
      std::uint64_t wrong = 0;
      const std::string row = run.measure(unit, geometry, wrong);
      context.progress.finish();
      if (context.reporter) context.reporter->note(row);
      summary.wrong += wrong;
      ++summary.measured;
    }
  }
  return summary;
}

}  // namespace collective::bench
