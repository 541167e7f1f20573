#include "fusion.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>

#include "byte_size.h"
#include "collective/distribute/communication_options.h"
#include "collective/distribute/cross_device_ops.h"
#include "collective/distribute/tensor.h"
#include "collective/distribute/values.h"
#include "collective/errors.h"
#include "time_stats.h"

namespace collective::bench {
namespace {

using distribute::CollectiveAllReduce;
using distribute::CommunicationImplementation;
using distribute::PerReplica;
using distribute::Tensor;

// The -a list in fusion mode, where the parser admits auto and ring only:
// -a all is ring, the one concrete algorithm CommunicationOptions reaches.
std::vector<Algorithm> requested_algorithms(const BenchOptions& options) {
  std::vector<Algorithm> result;
  if (options.all_algorithms) result.push_back(Algorithm::kRing);
  for (Algorithm algorithm : options.algorithms) {
    if (std::find(result.begin(), result.end(), algorithm) == result.end()) {
      result.push_back(algorithm);
    }
  }
  return result;
}

CommunicationImplementation implementation_for(Algorithm algorithm) {
  return algorithm == Algorithm::kRing ? CommunicationImplementation::kRing
                                       : CommunicationImplementation::kAuto;
}

// The algorithm of the library calls made since `sequence_before`; none
// when the strategies layer made none (one rank, empty tensors).
std::optional<Algorithm> algorithm_since(const Communicator& communicator,
                                         std::uint64_t sequence_before) {
  if (communicator.sequence_number() == sequence_before) return std::nullopt;
  return communicator.last_algorithm();
}

class FusionRun {
 public:
  explicit FusionRun(BenchContext& context)
      : context_(context), injector_(context.options.inject_error) {}

  RunSummary run();

 private:
  struct Step {
    std::size_t count;
    std::vector<Algorithm> algorithms;
  };

  void refuse_unsupported(const Step& step, DataType type) const;
  FusionRow measure(std::size_t count, DataType type, ReduceOp op, Algorithm algorithm);
  std::uint64_t check_results(const ValuePattern& pattern, std::vector<Tensor>& results,
                              std::size_t count, const std::string& what);

  BenchContext& context_;
  ErrorInjector injector_;
  // One lock for the communicator, as a strategy shares one between its
  // cross-device ops.
  std::shared_ptr<std::mutex> communicator_mutex_ = std::make_shared<std::mutex>();
};

void FusionRun::refuse_unsupported(const Step& step, DataType type) const {
  const std::size_t n = context_.options.fusion_tensors;
  for (Algorithm algorithm : step.algorithms) {
    if (algorithm == Algorithm::kAuto) continue;
    // One tensor alone, and all of them in one pack (the largest call).
    for (const std::size_t count : {step.count, n * step.count}) {
      try {
        context_.communicator.choose_algorithm(CollectiveKind::kAllReduce, count, type, algorithm,
                                               context_.options.deterministic);
      } catch (const UnsupportedError& error) {
        throw BenchError("--fusion -a " + std::string(to_string(algorithm)) +
                         " cannot run all_reduce of " + std::to_string(count) + " " +
                         std::string(to_string(type)) + ": " + error.cause());
      }
    }
  }
}

RunSummary FusionRun::run() {
  const BenchOptions& options = context_.options;
  const std::size_t n = options.fusion_tensors;
  const std::vector<Algorithm> algorithms = requested_algorithms(options);
  // Refusals first, on every rank alike, before any call.
  std::size_t total = 0;
  std::vector<std::pair<DataType, std::vector<Step>>> plan;
  for (DataType type : options.datatypes) {
    std::vector<Step> steps;
    for (const std::size_t bytes : options.sizes()) {
      const std::size_t count = bytes / element_size(type);
      if (!steps.empty() && steps.back().count == count) continue;
      steps.push_back(Step{count, algorithms});
      refuse_unsupported(steps.back(), type);
    }
    total += steps.size() * static_cast<std::size_t>(std::count_if(
                                options.ops.begin(), options.ops.end(),
                                [type](ReduceOp op) { return op_applies_to(op, type); }));
    plan.emplace_back(type, std::move(steps));
  }

  RunSummary summary;
  double busbw_total = 0;
  std::size_t done = 0;
  for (const auto& [type, steps] : plan) {
    for (ReduceOp op : options.ops) {
      if (!op_applies_to(op, type)) continue;  // the bitwise ops: integer types only
      for (const Step& step : steps) {
        for (Algorithm algorithm : step.algorithms) {
          context_.progress.update(done, total,
                                   "fusion " + std::to_string(n) + " x " +
                                       format_byte_size(step.count * element_size(type)) + " " +
                                       std::string(to_string(type)) + " " +
                                       std::string(to_string(algorithm)));
          const FusionRow row = measure(step.count, type, op, algorithm);
          context_.progress.finish();
          if (context_.reporter) context_.reporter->fusion_row(row);
          ++summary.measured;
          summary.wrong += row.wrong;
          busbw_total += row.busbw_gbs;
        }
        ++done;
      }
    }
  }
  if (summary.measured > 0) {
    summary.avg_busbw_gbs = busbw_total / static_cast<double>(summary.measured);
  }
  summary.min_busbw_gbs = options.min_busbw_gbs;
  if (options.min_busbw_gbs) summary.busbw_ok = summary.avg_busbw_gbs >= *options.min_busbw_gbs;
  return summary;
}

// Every element of every result tensor, result k holding elements
// k * count ... of the pattern. Returns this rank's wrong elements.
std::uint64_t FusionRun::check_results(const ValuePattern& pattern, std::vector<Tensor>& results,
                                       std::size_t count, const std::string& what) {
  const int rank = context_.communicator.rank();
  const DataType type = pattern.type();
  std::uint64_t wrong = 0;
  for (std::size_t k = 0; k < context_.options.fusion_tensors; ++k) {
    const std::string tensor = what + ", tensor " + std::to_string(k);
    if (k >= results.size() || results[k].dtype() != type || results[k].num_elements() != count) {
      // A result of the wrong type or shape: every element is wrong.
      const std::string got = k < results.size() ? results[k].debug_string() : "no tensor";
      std::ostringstream line;
      line << "collective_bench: rank " << rank << ": " << tensor << ": expected "
           << to_string(type) << " [" << count << "], got " << got << "\n";
      std::cerr << line.str();
      wrong += std::max<std::size_t>(count, 1);
      continue;
    }
    const WrongElements w =
        check_reduction(pattern, Region{results[k].raw_data(), count, k * count});
    report_wrong(w, rank, tensor);
    wrong += w.count;
  }
  return wrong;
}

FusionRow FusionRun::measure(std::size_t count, DataType type, ReduceOp op, Algorithm algorithm) {
  const BenchOptions& options = context_.options;
  Communicator& communicator = context_.communicator;
  const MPI_Comm comm = context_.mpi.comm();
  const std::size_t n = options.fusion_tensors;
  const std::size_t bytes = count * element_size(type);

  FusionRow row;
  row.tensor_bytes = bytes;
  row.count = count;
  row.tensors = n;
  row.bytes_per_pack = options.fusion_bytes_per_pack;
  row.type = type;
  row.op = op;
  row.requested = algorithm;

  // What MultiWorkerMirroredStrategy builds: the cross-worker ops over this
  // communicator with the local step of one replica per process. One object
  // per side, so that packs_reduced() counts the batched side's packs.
  distribute::CommunicationOptions communication;
  communication.implementation = implementation_for(algorithm);
  communication.bytes_per_pack = options.fusion_bytes_per_pack;
  communication.deterministic = options.deterministic;
  CollectiveAllReduce one_by_one_ops(communicator, communication, nullptr, communicator_mutex_);
  CollectiveAllReduce batched_ops(communicator, communication, nullptr, communicator_mutex_);

  std::vector<PerReplica<Tensor>> values;
  values.reserve(n);
  for (std::size_t k = 0; k < n; ++k) {
    values.emplace_back(
        std::vector<Tensor>{Tensor(type, distribute::Shape{static_cast<std::int64_t>(count)})});
  }
  std::vector<Tensor> separate_results(n);
  std::vector<Tensor> batched_results;

  auto one_by_one = [&] {
    const std::uint64_t sequence = communicator.sequence_number();
    for (std::size_t k = 0; k < n; ++k) separate_results[k] = one_by_one_ops.reduce(op, values[k]);
    row.separate_algorithm = algorithm_since(communicator, sequence);
  };
  auto batched = [&] {
    const std::uint64_t sequence = communicator.sequence_number();
    const std::uint64_t packs = batched_ops.packs_reduced();
    batched_results = batched_ops.batch_reduce(op, values);
    row.packs = static_cast<std::size_t>(batched_ops.packs_reduced() - packs);
    row.fused_algorithm = algorithm_since(communicator, sequence);
  };

  const int rank = communicator.rank();
  const int ranks = communicator.size();
  if (options.check) {
    // Tensor k holds elements k * count ... of one long pattern, so a
    // result unpacked into the wrong place is caught.
    const ValuePattern pattern = ValuePattern::reduction(type, op, ranks);
    for (std::size_t k = 0; k < n; ++k) {
      fill_inputs(pattern, rank, Region{values[k][0].raw_data(), count, k * count});
    }
    std::ostringstream what;
    what << "fusion all_reduce " << to_string(algorithm) << ", " << n << " tensors of " << bytes
         << " B of " << to_string(type) << ", " << to_string(op);
    std::uint64_t wrong = 0;
    one_by_one();
    injector_.maybe_corrupt(type, Region{separate_results[0].raw_data(), count, 0},
                            rank == ranks - 1);
    wrong += check_results(pattern, separate_results, count, what.str() + ", reduce one by one");
    batched();
    wrong += check_results(pattern, batched_results, count, what.str() + ", batch_reduce");
    std::uint64_t total = 0;
    MPI_Allreduce(&wrong, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
    row.checked = true;
    row.wrong = total;
  }

  // The inputs stay as they are (reduce and batch_reduce return new
  // tensors); values the op leaves unchanged keep the timing free of
  // denormals, as in the sweep.
  for (PerReplica<Tensor>& value : values) {
    fill_timing_values(type, op, Region{value[0].raw_data(), count, 0});
  }
  for (int i = 0; i < options.warmup_iters; ++i) {
    one_by_one();
    batched();
    context_.progress.tick();
  }
  std::vector<double> separate_seconds(static_cast<std::size_t>(options.iters));
  std::vector<double> batched_seconds(separate_seconds.size());
  for (std::size_t i = 0; i < separate_seconds.size(); ++i) {
    if (i % 2 == 1) batched_seconds[i] = timed_seconds(comm, batched);
    separate_seconds[i] = timed_seconds(comm, one_by_one);
    if (i % 2 == 0) batched_seconds[i] = timed_seconds(comm, batched);
    context_.progress.tick();
  }
  row.separate = slowest_rank_stats(separate_seconds, comm);
  row.fused = slowest_rank_stats(batched_seconds, comm);
  row.speedup = row.fused.p50_us > 0 ? row.separate.p50_us / row.fused.p50_us : 0;
  const double total_bytes = static_cast<double>(n * bytes);
  row.algbw_gbs = gigabytes_per_second(total_bytes, row.fused.mean_us);
  row.busbw_gbs = ranks > 1 ? row.algbw_gbs * 2.0 * (ranks - 1) / ranks : 0;
  return row;
}

}  // namespace

RunSummary run_fusion(BenchContext& context) { return FusionRun(context).run(); }

}  // namespace collective::bench
