#include "fusion.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "byte_size.h"
#include "time_stats.h"

namespace collective::bench {

void FusionDriver::run() {
  const BenchOptions& options = context_.options;
  const std::size_t n = options.fusion_tensors;
  // Refusals first: every algorithm must be able to serve every call.
  struct Step {
    std::size_t count;
    std::vector<Algorithm> algorithms;
  };
  std::size_t total = 0;
  std::vector<std::pair<DataType, std::vector<Step>>> plan;
  for (DataType type : options.datatypes) {
    std::vector<Step> steps;
    for (const std::size_t bytes : options.sizes()) {
      const std::size_t count = bytes / element_size(type);
      if (!steps.empty() && steps.back().count == count) continue;
      steps.push_back(Step{count, algorithms_for(context_, CollectiveKind::kAllReduce, count, type)});
    }
    total += steps.size() * options.ops.size();
    plan.emplace_back(type, std::move(steps));
  }
  std::size_t done = 0;
  for (const auto& [type, steps] : plan) {
    const std::size_t tensor_bytes = steps.back().count * element_size(type);
    tensors_.resize(n);
    for (AlignedBuffer& tensor : tensors_) tensor.reserve(tensor_bytes);
    packed_.reserve(n * tensor_bytes);
    for (ReduceOp op : options.ops) {
      for (const Step& step : steps) {
        for (Algorithm algorithm : step.algorithms) {
          context_.progress.update(done, total,
                                   "fusion " + std::to_string(n) + " x " +
                                       format_byte_size(step.count * element_size(type)) + " " +
                                       std::string(to_string(type)) + " " +
                                       std::string(to_string(algorithm)));
          FusionRow row = measure(step.count, type, op, algorithm);
          context_.progress.finish();
          if (context_.reporter) context_.reporter->fusion_row(row);
          rows_.push_back(row);
        }
        ++done;
      }
    }
  }
}

FusionRow FusionDriver::measure(std::size_t count, DataType type, ReduceOp op,
                                Algorithm algorithm) {
  const BenchOptions& options = context_.options;
  Communicator& communicator = context_.communicator;
  const MPI_Comm comm = context_.mpi.comm();
  const std::size_t n = options.fusion_tensors;
  const std::size_t bytes = count * element_size(type);
  AllReduceOptions call;
  call.algorithm = algorithm;
  call.op = op;

  FusionRow row;
  row.tensor_bytes = bytes;
  row.count = count;
  row.tensors = n;
  row.type = type;
  row.op = op;
  row.requested = algorithm;

  auto* packed = static_cast<std::byte*>(packed_.data());
  auto one_by_one = [&] {
    for (AlignedBuffer& tensor : tensors_) {
      communicator.all_reduce(tensor.data(), tensor.data(), count, type, call);
    }
    row.separate_algorithm = communicator.last_algorithm();
  };
  auto fused = [&] {
    for (std::size_t k = 0; k < n; ++k) std::memcpy(packed + k * bytes, tensors_[k].data(), bytes);
    communicator.all_reduce(packed, packed, n * count, type, call);
    row.fused_algorithm = communicator.last_algorithm();
    for (std::size_t k = 0; k < n; ++k) std::memcpy(tensors_[k].data(), packed + k * bytes, bytes);
  };

  const int rank = communicator.rank();
  const int ranks = communicator.size();
  if (options.check) {
    // Tensor k holds elements k * count ... of one long pattern, so a tensor
    // unpacked into the wrong place is caught.
    const ValuePattern pattern = ValuePattern::reduction(type, op, ranks);
    std::uint64_t wrong = 0;
    for (int variant = 0; variant < 2; ++variant) {
      for (std::size_t k = 0; k < n; ++k) {
        fill_inputs(pattern, rank, Region{tensors_[k].data(), count, k * count});
      }
      variant == 0 ? one_by_one() : fused();
      injector_.maybe_corrupt(type, Region{tensors_[0].data(), count, 0}, rank == ranks - 1);
      for (std::size_t k = 0; k < n; ++k) {
        const WrongElements w = check_reduction(pattern, Region{tensors_[k].data(), count, k * count});
        wrong += w.count;
        std::ostringstream what;
        what << "fusion all_reduce " << (variant == 0 ? "one by one" : "packed") << ", tensor "
             << k << " of " << n << ", " << bytes << " B of " << to_string(type) << ", "
             << to_string(op);
        report_wrong(w, rank, what.str());
      }
    }
    std::uint64_t total = 0;
    MPI_Allreduce(&wrong, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
    row.checked = true;
    row.wrong = total;
  }

  for (AlignedBuffer& tensor : tensors_) {
    fill_timing_values(type, op, Region{tensor.data(), count, 0});
  }
  for (int i = 0; i < options.warmup_iters; ++i) {
    one_by_one();
    fused();
    context_.progress.tick();
  }
  std::vector<double> separate_seconds(static_cast<std::size_t>(options.iters));
  std::vector<double> fused_seconds(separate_seconds.size());
  for (std::size_t i = 0; i < separate_seconds.size(); ++i) {
    if (i % 2 == 1) fused_seconds[i] = timed_seconds(comm, fused);
    separate_seconds[i] = timed_seconds(comm, one_by_one);
    if (i % 2 == 0) fused_seconds[i] = timed_seconds(comm, fused);
    context_.progress.tick();
  }
  row.separate = slowest_rank_stats(separate_seconds, comm);
  row.fused = slowest_rank_stats(fused_seconds, comm);
  row.speedup = row.fused.p50_us > 0 ? row.separate.p50_us / row.fused.p50_us : 0;
  const double total_bytes = static_cast<double>(n * bytes);
  row.algbw_gbs = gigabytes_per_second(total_bytes, row.fused.mean_us);
  row.busbw_gbs = ranks > 1 ? row.algbw_gbs * 2.0 * (ranks - 1) / ranks : 0;
  return row;
}

RunSummary summarize_fusion_rows(const std::vector<FusionRow>& rows, const BenchOptions& options) {
  RunSummary summary;
  double busbw_total = 0;
  for (const FusionRow& row : rows) {
    ++summary.measured;
    summary.wrong += row.wrong;
    busbw_total += row.busbw_gbs;
  }
  if (summary.measured > 0) summary.avg_busbw_gbs = busbw_total / static_cast<double>(summary.measured);
  summary.min_busbw_gbs = options.min_busbw_gbs;
  if (options.min_busbw_gbs) summary.busbw_ok = summary.avg_busbw_gbs >= *options.min_busbw_gbs;
  return summary;
}

}  // namespace collective::bench
