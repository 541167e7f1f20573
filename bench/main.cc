// collective_bench: launch with mpirun; see --help and docs/bench.md.
// Exit status: 0 all results correct (and busbw at or above --min-busbw),
// 1 a wrong result or busbw under --min-busbw, 2 a command line that cannot
// run (also: buffers that cannot fit, memory_budget.h), 3 a failure during
// the run (also: the report or rules file could not be written).
#include <mpi.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "bench_options.h"
#include "collective/collective.h"
#include "device_buffer.h"
#include "driver.h"
#include "fusion.h"
#include "overlap.h"
#include "memory_budget.h"
#include "mpi_baseline.h"
#include "progress.h"
#include "report.h"
#include "rules_file.h"
#include "run_info.h"

namespace {

using namespace collective;
using namespace collective::bench;

constexpr int kExitWrong = 1;
constexpr int kExitUsage = 2;
constexpr int kExitFailure = 3;

// A file the report or the rules could not be written to: raised on every
// rank alike (rank 0 tells the others), after the run.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Rank 0 flushes and closes `file`; every rank learns whether everything
// reached it (a full disk, /dev/full, shows only here).
void finish_file(std::ofstream* file, const std::string& flag, const std::string& path, int rank,
                 MPI_Comm comm, int earlier_error = 0) {
  int ok = 1;
  int error = 0;
  if (rank == 0 && file != nullptr) {
    errno = 0;
    file->flush();
    file->close();
    ok = file->fail() ? 0 : 1;
    // A write that failed earlier (a large one goes straight to the file,
    // past the buffer) left the stream failed: its errno is the cause.
    error = earlier_error != 0 ? earlier_error : errno;
  }
  int verdict[2] = {ok, error};
  MPI_Bcast(verdict, 2, MPI_INT, 0, comm);
  if (!verdict[0]) {
    throw OutputError(flag + ": writing " + path + " failed" +
                      (verdict[1] != 0 ? std::string(" (") + std::strerror(verdict[1]) + ")" : ""));
  }
}

// --memory device: every rank takes its GPU (local rank modulo the
// GPUs) before the first buffer; rank 0 says which, for every rank. A rank
// without a GPU stops the run on every rank alike, naming CUDA's reason.
void select_devices(const BenchOptions& options, MPI_Comm comm) {
  if (options.memory != BufferMemory::kDevice) return;
  if (!device_buffers_built()) {
    throw BenchError(
        "--memory device: this build has no NCCL path (CUDA and NCCL were not found when it "
        "was configured; docs/gpu.md)");
  }
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const VisibleDevices devices = visible_devices();
  // The first rank with the fewest devices tells everyone why.
  struct {
    int count;
    int rank;
  } mine{devices.count, rank}, fewest{};
  MPI_Allreduce(&mine, &fewest, 1, MPI_2INT, MPI_MINLOC, comm);
  if (fewest.count == 0) {
    int length = static_cast<int>(devices.reason.size());
    MPI_Bcast(&length, 1, MPI_INT, fewest.rank, comm);
    std::string reason = devices.reason;
    reason.resize(static_cast<std::size_t>(length));
    MPI_Bcast(reason.data(), length, MPI_CHAR, fewest.rank, comm);
    throw BenchError("--memory device: CUDA finds no device on rank " +
                     std::to_string(fewest.rank) + " (" + reason + ")");
  }
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local_rank = 0;
  int local_size = 1;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);
  // NCCL refuses two ranks of one communicator on one GPU: say so first.
  struct {
    int crowded;
    int rank;
  } share{local_size > devices.count ? 1 : 0, rank}, worst{};
  MPI_Allreduce(&share, &worst, 1, MPI_2INT, MPI_MAXLOC, comm);
  if (worst.crowded) {
    int counts[2] = {local_size, devices.count};
    MPI_Bcast(counts, 2, MPI_INT, worst.rank, comm);
    throw BenchError("--memory device: rank " + std::to_string(worst.rank) + "'s node runs " +
                     std::to_string(counts[0]) + " ranks on " + std::to_string(counts[1]) +
                     " GPU(s); NCCL needs one GPU per rank");
  }
  const std::string chosen = select_device(local_rank, devices.count);
  constexpr int kWidth = 128;
  std::string padded = chosen.substr(0, kWidth - 1);
  padded.resize(kWidth, '\0');
  std::string all(rank == 0 ? static_cast<std::size_t>(kWidth) * size : 0, '\0');
  MPI_Gather(padded.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, 0, comm);
  // Beside a table only: a CSV or JSON report on stdout stays parseable.
  if (rank == 0 && (options.format == OutputFormat::kTable || options.output_file)) {
    for (int r = 0; r < size; ++r) {
      std::cout << "# rank " << r << " buffers on GPU " << all.substr(r * kWidth).c_str() << "\n";
    }
  }
}

// Rank 0 opens --output; every rank learns whether it could.
std::unique_ptr<std::ofstream> open_output(const BenchOptions& options, int rank) {
  int ok = 1;
  std::unique_ptr<std::ofstream> file;
  if (rank == 0 && options.output_file) {
    file = std::make_unique<std::ofstream>(*options.output_file);
    ok = file->good() ? 1 : 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok) throw BenchError("--output: cannot write " + *options.output_file);
  return file;
}

int run(const BenchOptions& options) {
  Communicator world = Communicator::world();
  MpiBaseline mpi;
  const int rank = world.rank();
  const RunInfo info = gather_run_info(mpi.comm(), options.command_line);
  refuse_runs_that_cannot_fit(options, mpi.comm());
  select_devices(options, mpi.comm());

  std::unique_ptr<std::ofstream> file = open_output(options, rank);
  ReporterGroup reporters;
  if (rank == 0) {
    if (file) {
      reporters.add(make_table_reporter(std::cout));
      reporters.add(make_reporter(options.format, *file));
    } else {
      reporters.add(make_reporter(options.format, std::cout));
    }
  }
  Progress progress(options.progress, rank == 0);
  BenchContext context{options, world, mpi, rank == 0 ? &reporters : nullptr, progress};

  if (rank == 0) reporters.begin(info, options);
  RunSummary summary;
  if (options.fusion_tensors > 0) {
    summary = run_fusion(context);
  } else if (options.nonblocking) {
    summary = run_overlap(context);
  } else {
    SweepDriver driver(context);
    driver.run();
    summary = summarize_rows(driver.rows(), options);
    if (options.rules_file) {
      const std::optional<int> ranks_per_node = info.min_ranks_per_node == info.max_ranks_per_node
                                                    ? std::optional<int>(info.min_ranks_per_node)
                                                    : std::nullopt;
      const auto rules = derive_rules(driver.rows(), info.nodes, ranks_per_node);
      int ok = 1;
      std::ofstream out;
      if (rank == 0) {
        out.open(*options.rules_file);
        ok = out.good() ? 1 : 0;
      }
      MPI_Bcast(&ok, 1, MPI_INT, 0, mpi.comm());
      if (!ok) throw OutputError("--generate-rules: cannot write " + *options.rules_file);
      int write_error = 0;
      if (rank == 0) {
        errno = 0;
        write_rules(out, rules);
        if (!out) write_error = errno;
      }
      finish_file(rank == 0 ? &out : nullptr, "--generate-rules", *options.rules_file, rank,
                  mpi.comm(), write_error);
      summary.rules_file = options.rules_file;
      summary.rules_written = rules.size();
    }
  }
  if (rank == 0) reporters.end(summary);
  if (options.output_file) {
    finish_file(file.get(), "--output", *options.output_file, rank, mpi.comm());
  }
  if (rank == 0 && !summary.busbw_ok) {
    std::cerr << "collective_bench: average bus bandwidth " << summary.avg_busbw_gbs
              << " GB/s is under --min-busbw " << *summary.min_busbw_gbs << " GB/s\n";
  }
  return summary.wrong == 0 && summary.busbw_ok ? 0 : kExitWrong;
}

}  // namespace

int main(int argc, char** argv) {
  Environment environment(argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  ParsedCommandLine parsed;
  try {
    parsed = parse_command_line(argc, argv);
  } catch (const UsageError& error) {
    // Every rank parses the same argv, so every rank fails alike.
    if (rank == 0) {
      std::cerr << "collective_bench: " << error.what()
                << "\n(collective_bench --help lists the flags)\n";
    }
    return kExitUsage;
  }
  if (parsed.show_help || parsed.show_version) {
    if (rank == 0) {
      if (parsed.show_version) {
        std::cout << "collective_bench (libcollective " << version_string() << ", git "
                  << git_revision() << ")\n";
      }
      if (parsed.show_help) std::cout << parsed.help_text;
    }
    return 0;
  }

  try {
    return run(parsed.options);
  } catch (const OutputError& error) {
    // Raised alike on every rank, after the run: the results are lost.
    if (rank == 0) std::cerr << "collective_bench: " << error.what() << "\n";
    return kExitFailure;
  } catch (const BenchError& error) {
    // Raised alike on every rank, before any call it concerns.
    if (rank == 0) std::cerr << "collective_bench: " << error.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& error) {
    // Other ranks may be inside a collective: end the job rather than hang.
    std::cerr << "collective_bench: rank " << rank << ": " << error.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, kExitFailure);
    return kExitFailure;
  }
}
