#include "overlap.h"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "byte_size.h"
#include "collective/work.h"
#include "shared_cases.h"
#include "time_stats.h"

namespace collective::bench {
namespace {

// The computation overlapped with the call: steps the compiler must keep.
void busy(std::uint64_t steps) {
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

class LibrarySide final : public OverlapSide {
 public:
  LibrarySide(Communicator& communicator, const void* send, void* recv, std::size_t count,
              DataType type, ReduceOp op, bool deterministic)
      : communicator_(communicator), send_(send), recv_(recv), count_(count), type_(type) {
    options_.op = op;
    options_.deterministic = deterministic;
  }
  void start() override {
    work_ = communicator_.all_reduce_async(send_, recv_, count_, type_, options_);
  }
  void wait() override { work_.wait(); }

 private:
  Communicator& communicator_;
  const void* send_;
  void* recv_;
  std::size_t count_;
  DataType type_;
  AllReduceOptions options_;
  Work work_;
};

// MPI_Iallreduce on the baseline's communicator, in pieces of at most
// INT_MAX elements (MPI's counts are int), all in flight together.
class MpiSide final : public OverlapSide {
 public:
  MpiSide(const MpiBaseline& mpi, const void* send, void* recv, std::size_t count, DataType type,
          ReduceOp op)
      : mpi_(mpi),
        send_(static_cast<const char*>(send)),
        recv_(static_cast<char*>(recv)),
        count_(count),
        type_(type),
        reduce_op_(op),
        op_(mpi.op(type, op)) {}
  void start() override {
    requests_.clear();
    const std::size_t element = element_size(type_);
    MpiBaseline::for_each_piece(count_, [&](std::size_t first, int n) {
      requests_.push_back(MPI_REQUEST_NULL);
      mpi_.check(MPI_Iallreduce(send_ + first * element, recv_ + first * element, n,
                                MpiBaseline::datatype(type_), op_, mpi_.comm(), &requests_.back()),
                 "MPI_Iallreduce");
    });
  }
  void wait() override {
    mpi_.check(
        MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall");
    mpi_.finish_mean(recv_, count_, type_, reduce_op_);
  }

 private:
  const MpiBaseline& mpi_;
  const char* send_;
  char* recv_;
  std::size_t count_;
  DataType type_;
  ReduceOp reduce_op_;
  MPI_Op op_;
  std::vector<MPI_Request> requests_;
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

std::string format_row(std::size_t bytes, std::size_t count, DataType type, ReduceOp op,
                       const SideTimes& ours, const SideTimes& mpi, std::uint64_t wrong) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "%12zu %12zu %8s %6s  %9.1f %9.1f %9.1f %6.1f  %9.1f %9.1f %9.1f %6.1f %6llu",
                bytes, count, std::string(to_string(type)).c_str(),
                std::string(to_string(op)).c_str(), ours.call_us, ours.compute_us, ours.total_us,
                ours.overlap, mpi.call_us, mpi.compute_us, mpi.total_us, mpi.overlap,
                static_cast<unsigned long long>(wrong));
  return line;
}

}  // namespace

double overlap_percent(double call_us, double compute_us, double total_us) {
  if (call_us <= 0) return 0;
  const double hidden = 100.0 * (1.0 - (total_us - compute_us) / call_us);
  return std::clamp(hidden, 0.0, 100.0);
}

RunSummary run_overlap(BenchContext& context) {
  const BenchOptions& options = context.options;
  Communicator& communicator = context.communicator;
  const MPI_Comm comm = context.mpi.comm();
  const int rank = communicator.rank();
  const double steps_per_second = busy_steps_per_second();
  if (context.reporter) {
    context.reporter->note(
        "overlap (OSU): call = start+wait, compute = busy loop calibrated to the call, total = "
        "start+compute+wait; overlap % = 100*(1-(total-compute)/call); medians in us");
    context.reporter->note(
        "        size        count     type  redop  ours:call   compute     total    ovl%"
        "   mpi:call   compute     total    ovl%  wrong");
  }
  RunSummary summary;
  ErrorInjector injector(options.inject_error);
  AlignedBuffer send, recv, mpi_recv;
  const std::size_t total = options.datatypes.size() * options.ops.size() * options.size_count();
  for (DataType type : options.datatypes) {
    const std::size_t element = element_size(type);
    for (ReduceOp op : options.ops) {
      std::size_t previous_count = SIZE_MAX;
      for (const std::size_t requested : options.sizes()) {
        const std::size_t count = requested / element;
        if (count == previous_count) continue;
        previous_count = count;
        const std::size_t bytes = count * element;
        context.progress.update(
            summary.measured, total,
            "overlap " + format_byte_size(bytes) + " " + std::string(to_string(type)));
        send.reserve(bytes);
        recv.reserve(bytes);
        mpi_recv.reserve(bytes);
        const ValuePattern pattern = ValuePattern::reduction(type, op, communicator.size());
        fill_inputs(pattern, rank, Region{send.data(), count, 0});
        LibrarySide ours(communicator, send.data(), recv.data(), count, type, op,
                         options.deterministic);
        MpiSide mpi(context.mpi, send.data(), mpi_recv.data(), count, type, op);
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
        }
        for (int s = 0; s < 2; ++s) {
          times[s].call_us = median_us(call_seconds[s], comm);
          times[s].compute_steps = calibrated_steps(times[s].call_us, steps_per_second);
        }
        // The computation alone, then start + computation + wait.
        std::vector<double> compute_seconds[2], total_seconds[2];
        for (int i = 0; i < options.iters; ++i) {
          for (int s = 0; s < 2; ++s) {
            compute_seconds[s].push_back(
                timed_seconds(comm, [&] { busy(times[s].compute_steps); }));
          }
        }
        for (int i = 0; i < options.warmup_iters + options.iters; ++i) {
          for (int s = 0; s < 2; ++s) {
            if (i == options.warmup_iters + options.iters - 1) {
              // The last overlapped call of each side is the one checked.
              fill_sentinel(type, Region{s == 0 ? recv.data() : mpi_recv.data(), count, 0});
            }
            const double t = timed_seconds(comm, [&] {
              sides[s]->start();
              busy(times[s].compute_steps);
              sides[s]->wait();
            });
            if (i >= options.warmup_iters) total_seconds[s].push_back(t);
          }
        }
        std::uint64_t wrong = 0;
        for (int s = 0; s < 2; ++s) {
          times[s].compute_us = median_us(compute_seconds[s], comm);
          times[s].total_us = median_us(total_seconds[s], comm);
          times[s].overlap =
              overlap_percent(times[s].call_us, times[s].compute_us, times[s].total_us);
          if (options.check) {
            const Region result{s == 0 ? recv.data() : mpi_recv.data(), count, 0};
            if (s == 0) injector.maybe_corrupt(type, result, true);
            const WrongElements w = check_reduction(pattern, result);
            report_wrong(w, rank,
                         std::string(s == 0 ? "all_reduce_async" : "MPI_Iallreduce") + " of " +
                             std::to_string(count) + " " + std::string(to_string(type)));
            wrong += w.count;
          }
        }
        std::uint64_t wrong_everywhere = 0;
        MPI_Allreduce(&wrong, &wrong_everywhere, 1, MPI_UINT64_T, MPI_SUM, comm);
        context.progress.finish();
        if (context.reporter) {
          context.reporter->note(
              format_row(bytes, count, type, op, times[0], times[1], wrong_everywhere));
        }
        summary.wrong += wrong_everywhere;
        ++summary.measured;
      }
    }
  }
  return summary;
}

}  // namespace collective::bench
