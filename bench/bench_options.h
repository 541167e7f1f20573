// The command line of collective_bench: nccl-tests' flags with their
// meanings, plus the collective, algorithm, baseline, output, fusion and
// rules-generation flags of this benchmark. Parsing is pure (no MPI), so
// every rank parses the same argv to the same options.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "collective/algorithm.h"
#include "collective/types.h"

namespace collective::bench {

enum class OutputFormat { kTable, kCsv, kJson };
enum class ProgressMode { kAuto, kOn, kOff };
// Where the timed buffers live: host memory, or CUDA device memory as
// nccl-tests' (--memory device, served by the nccl algorithm).
enum class BufferMemory { kHost, kDevice };

struct BenchOptions {
  // Sizes: from min_bytes to max_bytes, multiplying by step_factor, or
  // adding step_bytes when -i is given. The size is the whole buffer as
  // nccl-tests counts it (for reduce_scatter the input, for all_gather the
  // output of all ranks together).
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{32} << 20;
  std::size_t step_factor = 2;
  std::size_t step_bytes = 0;  // > 0: additive steps (-i)
  int iters = 20;
  int warmup_iters = 5;
  bool check = true;
  // --deterministic 1: reducing collectives run with options.deterministic.
  bool deterministic = false;
  std::vector<CollectiveKind> collectives{CollectiveKind::kAllReduce};
  std::vector<DataType> datatypes{DataType::kFloat32};
  std::vector<ReduceOp> ops{ReduceOp::kSum};
  int root = 0;
  // --uneven N: in the collectives with per-rank counts (the v-variants),
  // rank 0's count is N times the others' (0: rank 0 contributes nothing).
  std::size_t uneven = 1;
  // Named algorithms (auto included) to run, in order. With all_algorithms
  // every concrete algorithm that supports the call runs first.
  std::vector<Algorithm> algorithms{Algorithm::kAuto};
  bool all_algorithms = false;
  bool baseline_mpi = false;
  BufferMemory memory = BufferMemory::kHost;
  OutputFormat format = OutputFormat::kTable;
  std::optional<std::string> output_file;
  std::optional<double> min_busbw_gbs;
  // --fusion N: N tensors per size through the strategies layer, reduce
  // one by one against one batch_reduce (fusion.h). Only auto and ring can
  // be requested there; -a all means ring. 0: fusion mode off.
  std::size_t fusion_tensors = 0;
  // --bytes-per-pack: the batch_reduce's CommunicationOptions::bytes_per_pack
  // (0: every tensor in one pack).
  std::size_t fusion_bytes_per_pack = 0;
  std::optional<std::string> rules_file;
  // --nonblocking: OSU's overlap measure of each collective's _async call
  // beside MPI's nonblocking one (overlap.h) instead of the sweep; -C may
  // name barrier then.
  bool nonblocking = false;
  ProgressMode progress = ProgressMode::kAuto;
  // Test-only (hidden): corrupt one result element before checking.
  bool inject_error = false;

  // The argv, joined, for the report header.
  std::string command_line;

  // The sizes of the sweep, in order (duplicates are removed later, after
  // rounding to whole elements). Allocates one entry per size: call it
  // only once the run has been found to fit (memory_budget.h).
  std::vector<std::size_t> sizes() const;
  // How many sizes the sweep has and the largest, by arithmetic alone (no
  // allocation, whatever -b/-e/-f/-i say); the largest is 0 when there are
  // none.
  std::size_t size_count() const;
  std::size_t largest_size() const;
};

// A command line that cannot be run; what() says which flag and why.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ParsedCommandLine {
  BenchOptions options;
  bool show_help = false;
  bool show_version = false;
  std::string help_text;  // the --help screen
};

// Throws UsageError for unknown flags, malformed values and combinations
// that make no sense (e.g. -b above -e, --fusion with reduce_scatter).
ParsedCommandLine parse_command_line(int argc, const char* const* argv);

const char* to_string(OutputFormat format);

}  // namespace collective::bench
