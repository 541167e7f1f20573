#include "driver.h"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "byte_size.h"
#include "collective/errors.h"
#include "speedup_summary.h"
#include "time_stats.h"

namespace collective::bench {

void ErrorInjector::maybe_corrupt(DataType type, Region region, bool rank_holds) {
  if (!pending_ || region.count == 0) return;
  // Only the chosen rank corrupts, once, in the first non-empty result.
  pending_ = false;
  if (rank_holds) corrupt_element(type, region, region.count / 2);
}

void report_wrong(const WrongElements& wrong, int rank, const std::string& what) {
  if (wrong.count == 0) return;
  std::ostringstream text;
  text << "collective_bench: rank " << rank << ": " << what << ": " << wrong.count
       << " wrong element" << (wrong.count == 1 ? "" : "s") << "; first at index "
       << wrong.first_index << ": expected " << wrong.first_expected << ", got "
       << wrong.first_actual << "\n";
  std::cerr << text.str() << std::flush;
}

std::vector<Algorithm> algorithms_for(const BenchContext& context, CollectiveKind kind,
                                      std::size_t count, DataType type) {
  std::vector<Algorithm> result;
  if (context.options.memory == BufferMemory::kDevice) {
    // Only nccl serves device buffers (the parser refused the others), and
    // choose_algorithm judges host buffers: the library refuses a
    // collective nccl does not serve at its first call, on every rank.
    for (Algorithm algorithm : context.options.algorithms) result.push_back(algorithm);
    if (context.options.all_algorithms &&
        std::find(result.begin(), result.end(), Algorithm::kNccl) == result.end()) {
      result.insert(result.begin(), Algorithm::kNccl);
    }
    return result;
  }
  if (context.options.all_algorithms) {
    for (int i = 1; i < kNumAlgorithms; ++i) {
      const auto algorithm = static_cast<Algorithm>(i);
      try {
        context.communicator.choose_algorithm(kind, count, type, algorithm,
                                              context.options.deterministic);
        result.push_back(algorithm);
      } catch (const UnsupportedError&) {
        // -a all: rows for the algorithms that can serve the call only.
      }
    }
  }
  for (Algorithm algorithm : context.options.algorithms) {
    if (std::find(result.begin(), result.end(), algorithm) != result.end()) continue;
    // AUTO too: with no algorithm that can serve the call (a deterministic
    // reduce_scatter_v today) the run is refused before it starts.
    try {
      context.communicator.choose_algorithm(kind, count, type, algorithm,
                                            context.options.deterministic);
    } catch (const UnsupportedError& error) {
      throw BenchError(
          "-a " + std::string(to_string(algorithm)) + " cannot run " +
          std::string(to_string(kind)) + " of " + std::to_string(count) + " " +
          std::string(to_string(type)) + ": " + error.cause() +
          (algorithm == Algorithm::kAuto ? "" : " (-a all runs every algorithm that can)"));
    }
    result.push_back(algorithm);
  }
  return result;
}

void require_root_in_run(const BenchOptions& options, const CollectiveCase& c, int ranks) {
  if (c.rooted() && options.root >= ranks) {
    throw BenchError("-r/--root " + std::to_string(options.root) + " is not a rank of this " +
                     std::to_string(ranks) + "-rank run");
  }
}

std::vector<std::optional<ReduceOp>> ops_for(const BenchOptions& options, const CollectiveCase& c,
                                             DataType type) {
  if (!c.reduces()) return {std::nullopt};
  std::vector<std::optional<ReduceOp>> ops;
  for (const ReduceOp op : options.ops) {
    if (op_applies_to(op, type)) ops.push_back(op);
  }
  return ops;
}

std::vector<Geometry> geometries_for(const BenchOptions& options, const CollectiveCase& c,
                                     std::size_t element_bytes, const cases::Shape& shape) {
  std::vector<Geometry> result;
  for (const std::size_t bytes : options.sizes()) {
    const Geometry geometry = c.geometry_for_bytes(bytes, element_bytes, shape);
    if (!result.empty() && result.back().count == geometry.count) continue;
    result.push_back(geometry);
  }
  return result;
}

void SweepDriver::run() {
  const BenchOptions& options = context_.options;
  const int ranks = context_.communicator.size();

  // Everything that can be refused is refused before the first call.
  struct Step {
    Geometry geometry;
    std::vector<Algorithm> algorithms;
  };
  struct Unit {
    const CollectiveCase* c;
    DataType type;
    std::optional<ReduceOp> op;
    std::vector<Step> steps;
  };
  std::vector<std::unique_ptr<CollectiveCase>> cases;
  std::vector<Unit> units;
  std::size_t total_steps = 0;
  for (CollectiveKind kind : options.collectives) {
    cases.push_back(make_collective_case(kind));
    const CollectiveCase& c = *cases.back();
    require_root_in_run(options, c, ranks);
    for (DataType type : options.datatypes) {
      const std::vector<std::optional<ReduceOp>> ops = ops_for(options, c, type);
      std::vector<Step> steps;
      const cases::Shape shape{ranks, context_.communicator.rank(), options.uneven};
      for (const Geometry& geometry : geometries_for(options, c, element_size(type), shape)) {
        if (options.baseline_mpi) {
          if (const char* limit = mpi_limit(c, geometry, shape)) {
            throw BenchError("--baseline mpi cannot run " + std::string(to_string(kind)) + " at " +
                             std::to_string(geometry.bytes) + " B of " +
                             std::string(to_string(type)) + ": " + limit + "; lower -e");
          }
        }
        steps.push_back(Step{geometry, algorithms_for(context_, kind, geometry.count, type)});
      }
      for (const auto& op : ops) {
        units.push_back(Unit{&c, type, op, steps});
        total_steps += steps.size();
      }
    }
  }

  std::size_t done = 0;
  for (const Unit& unit : units) {
    const Geometry& largest = unit.steps.back().geometry;
    const std::size_t element = element_size(unit.type);
    send_.reserve(largest.send_elements * element);
    recv_.reserve(largest.recv_elements * element);
    if (on_device()) {
      device_send_.reserve(largest.send_elements * element);
      device_recv_.reserve(largest.recv_elements * element);
    }
    for (const Step& step : unit.steps) {
      for (Algorithm algorithm : step.algorithms) {
        context_.progress.update(
            done, total_steps,
            std::string(to_string(unit.c->kind())) + " " + std::string(to_string(unit.type)) + " " +
                format_byte_size(step.geometry.bytes) + " " + std::string(to_string(algorithm)));
        SizeRow row = measure(*unit.c, step.geometry, unit.type, unit.op, algorithm);
        context_.progress.finish();
        if (context_.reporter) context_.reporter->row(row);
        rows_.push_back(std::move(row));
      }
      ++done;
    }
  }
}

SizeRow SweepDriver::measure(const CollectiveCase& c, const Geometry& geometry, DataType type,
                             std::optional<ReduceOp> op, Algorithm algorithm) {
  SizeRow row;
  row.collective = c.kind();
  row.bytes = geometry.bytes;
  row.count = geometry.count;
  row.element_bytes = element_size(type);
  row.type = type;
  row.op = op;
  row.root = c.rooted() ? context_.options.root : -1;
  row.requested = algorithm;

  CallArgs args;
  args.send_base = on_device() ? device_send_.data() : send_.data();
  args.recv_base = on_device() ? device_recv_.data() : recv_.data();
  args.count = geometry.count;
  args.type = type;
  args.op = op.value_or(ReduceOp::kSum);
  args.root = c.rooted() ? context_.options.root : 0;
  args.algorithm = algorithm;
  args.deterministic = context_.options.deterministic;
  args.rank = context_.communicator.rank();
  args.ranks = context_.communicator.size();
  args.uneven = context_.options.uneven;

  if (c.has_out_of_place()) row.out_of_place = measure_placement(c, geometry, args, false);
  if (c.has_in_place()) row.in_place = measure_placement(c, geometry, args, true);
  return row;
}

CallArgs SweepDriver::on_host(const CollectiveCase& c, const CallArgs& args) const {
  if (!on_device()) return args;
  CallArgs host = args;
  host.send_base = send_.data();
  host.recv_base = recv_.data();
  c.place(host);
  return host;
}

void SweepDriver::upload(const Geometry& geometry, DataType type) {
  device_send_.upload(send_.data(), geometry.send_elements * element_size(type));
  device_recv_.upload(recv_.data(), geometry.recv_elements * element_size(type));
}

void SweepDriver::download(const Geometry& geometry, DataType type) {
  device_send_.download(send_.data(), geometry.send_elements * element_size(type));
  device_recv_.download(recv_.data(), geometry.recv_elements * element_size(type));
}

std::uint64_t SweepDriver::check_once(const CollectiveCase& c, const Geometry& geometry,
                                      const CallArgs& args, Implementation implementation) {
  const CallArgs host = on_host(c, args);
  fill_sentinel(host.type, Region{host.recv_base, geometry.recv_elements, 0});
  for (const Region& input : c.inputs(host)) fill_inputs(c.pattern(host), host.rank, input);
  if (on_device()) upload(geometry, args.type);
  ResultLayout result;
  if (implementation == Implementation::kLibrary) {
    c.run(context_.communicator, args);
    if (on_device()) download(geometry, args.type);
    result = c.result(host);
    injector_.maybe_corrupt(host.type, Region{result.data, result.elements(), 0},
                            host.rank == c.result_holder(host));
  } else {
    run_mpi(c, context_.mpi, args);
    result = mpi_result(c, args);
  }
  const WrongElements wrong = c.check(host, result);
  if (wrong.count > 0) {
    std::ostringstream what;
    what << (implementation == Implementation::kMpi ? "MPI baseline " : "") << to_string(c.kind())
         << " " << to_string(args.algorithm) << " " << (args.in_place ? "in-place" : "out-of-place")
         << ", " << geometry.bytes << " B of " << to_string(args.type);
    if (c.reduces()) what << ", " << to_string(args.op);
    report_wrong(wrong, args.rank, what.str());
  }
  return wrong.count;
}

PlacementResult SweepDriver::measure_placement(const CollectiveCase& c, const Geometry& geometry,
                                               CallArgs args, bool in_place) {
  const BenchOptions& options = context_.options;
  const MPI_Comm comm = context_.mpi.comm();
  PlacementResult result;
  result.measured = true;
  result.in_place = in_place;
  args.in_place = in_place;
  c.place(args);

  std::uint64_t baseline_wrong = 0;
  if (options.check) {
    std::uint64_t local[2] = {check_once(c, geometry, args, Implementation::kLibrary), 0};
    if (options.baseline_mpi) local[1] = check_once(c, geometry, args, Implementation::kMpi);
    std::uint64_t total[2] = {0, 0};
    MPI_Allreduce(local, total, 2, MPI_UINT64_T, MPI_SUM, comm);
    result.checked = true;
    result.wrong = total[0];
    baseline_wrong = total[1];
  }

  const CallArgs host = on_host(c, args);
  fill_timing_values(host.type, host.op, Region{host.send_base, geometry.send_elements, 0});
  fill_timing_values(host.type, host.op, Region{host.recv_base, geometry.recv_elements, 0});
  if (on_device()) upload(geometry, args.type);
  auto ours = [&] { c.run(context_.communicator, args); };
  auto theirs = [&] { run_mpi(c, context_.mpi, args); };
  for (int i = 0; i < options.warmup_iters; ++i) {
    ours();
    if (options.baseline_mpi) theirs();
    context_.progress.tick();
  }
  std::vector<double> our_seconds(static_cast<std::size_t>(options.iters));
  std::vector<double> their_seconds(options.baseline_mpi ? our_seconds.size() : 0);
  for (std::size_t i = 0; i < our_seconds.size(); ++i) {
    // Alternate which goes first, so neither always finds the other's
    // data in cache.
    if (options.baseline_mpi && i % 2 == 1) their_seconds[i] = timed_seconds(comm, theirs);
    our_seconds[i] = timed_seconds(comm, ours);
    if (options.baseline_mpi && i % 2 == 0) their_seconds[i] = timed_seconds(comm, theirs);
    context_.progress.tick();
  }
  result.algorithm = context_.communicator.last_algorithm();
  result.time = slowest_rank_stats(our_seconds, comm);
  const auto bytes = static_cast<double>(geometry.bytes);
  const double factor = c.bus_factor(args.ranks);
  result.algbw_gbs = gigabytes_per_second(bytes, result.time.mean_us);
  result.busbw_gbs = result.algbw_gbs * factor;
  if (options.baseline_mpi) {
    BaselineResult baseline;
    baseline.time = slowest_rank_stats(their_seconds, comm);
    baseline.algbw_gbs = gigabytes_per_second(bytes, baseline.time.mean_us);
    baseline.busbw_gbs = baseline.algbw_gbs * factor;
    baseline.speedup = result.time.p50_us > 0 ? baseline.time.p50_us / result.time.p50_us : 0;
    baseline.wrong = baseline_wrong;
    result.baseline = baseline;
  }
  return result;
}

RunSummary summarize_rows(const std::vector<SizeRow>& rows, const BenchOptions& options) {
  RunSummary summary;
  double busbw_total = 0;
  double baseline_busbw_total = 0;
  for (const SizeRow& row : rows) {
    for (const PlacementResult* p : {&row.out_of_place, &row.in_place}) {
      if (!p->measured) continue;
      ++summary.measured;
      summary.wrong += p->wrong;
      busbw_total += p->busbw_gbs;
      if (p->baseline) {
        summary.wrong += p->baseline->wrong;
        baseline_busbw_total += p->baseline->busbw_gbs;
      }
    }
  }
  if (summary.measured > 0) {
    summary.avg_busbw_gbs = busbw_total / static_cast<double>(summary.measured);
    if (options.baseline_mpi) {
      summary.avg_baseline_busbw_gbs = baseline_busbw_total / static_cast<double>(summary.measured);
    }
  }
  summary.auto_speedup = summarize_speedups(rows, true);
  summary.forced_speedup = summarize_speedups(rows, false);
  summary.min_busbw_gbs = options.min_busbw_gbs;
  if (options.min_busbw_gbs) summary.busbw_ok = summary.avg_busbw_gbs >= *options.min_busbw_gbs;
  return summary;
}

}  // namespace collective::bench
