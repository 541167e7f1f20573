// alltoall_timing: a benchmark (never run as a test) of all_to_all: the
// library's algorithms against the MPI library's own MPI_Alltoall,
// alternating in the same run (until collective_bench has -C alltoall).
//
//   mpirun -np 4 alltoall_timing [--min-bytes 8] [--max-bytes 64M] [--factor 2]
//       [--reps 5] [--algorithms auto,pairwise,bruck]
//
// Bytes are one rank's send buffer (p blocks of bytes/p int8 elements, at
// least one). For each size and repetition every variant runs `iters`
// calls in turn (MPI first); a variant's time is the slowest rank's mean
// over its calls (as many as make about 20 ms of MPI_Alltoall, from one
// timed call, at least 2); the table shows medians over the repetitions
// and each algorithm's speed-up over MPI (MPI's median / its median).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace {

using collective::Algorithm;

std::size_t parse_bytes(const char* text) {
  char* end = nullptr;
  double value = std::strtod(text, &end);
  if (*end == 'K' || *end == 'k') value *= 1024;
  if (*end == 'M' || *end == 'm') value *= 1024 * 1024;
  return static_cast<std::size_t>(value);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  collective::Environment environment(argc, argv);
  std::size_t min_bytes = 8, max_bytes = std::size_t{64} << 20;
  int reps = 5;
  std::size_t factor = 2;
  std::vector<Algorithm> algorithms = {Algorithm::kAuto};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--min-bytes") min_bytes = parse_bytes(argv[i + 1]);
    if (flag == "--max-bytes") max_bytes = parse_bytes(argv[i + 1]);
    if (flag == "--reps") reps = std::atoi(argv[i + 1]);
    if (flag == "--factor") factor = std::max<std::size_t>(2, parse_bytes(argv[i + 1]));
    if (flag == "--algorithms") {
      algorithms.clear();
      std::string list = argv[i + 1];
      for (std::size_t at = 0; at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const auto parsed = collective::parse_algorithm(list.substr(at, comma - at));
        if (!parsed) {
          std::fprintf(stderr, "alltoall_timing: unknown algorithm in %s\n", list.c_str());
          return 2;
        }
        algorithms.push_back(*parsed);
        at = comma + 1;
      }
    }
  }
  auto comm = collective::Communicator::world();
  const int rank = comm.rank();
  const auto p = static_cast<std::size_t>(comm.size());
  if (rank == 0) {
    std::printf("%10s %10s %12s", "bytes", "block", "mpi_us");
    for (Algorithm a : algorithms) {
      std::printf(" %12s %8s", (std::string(collective::to_string(a)) + "_us").c_str(), "x_mpi");
    }
    std::printf("  auto_picks\n");
  }
  for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
    const std::size_t count = std::max<std::size_t>(1, bytes / p);
    std::vector<std::int8_t> send(p * count), recv(p * count);
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = static_cast<std::int8_t>(i * 7 + rank);
    auto mpi_call = [&] {
      MPI_Alltoall(send.data(), static_cast<int>(count), MPI_INT8_T, recv.data(),
                   static_cast<int>(count), MPI_INT8_T, MPI_COMM_WORLD);
    };
    // About 20 ms of MPI_Alltoall per variant and repetition, from one
    // timed call (the slowest rank's), at least 2 calls.
    mpi_call();
    double once = MPI_Wtime();
    mpi_call();
    once = MPI_Wtime() - once;
    MPI_Allreduce(MPI_IN_PLACE, &once, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const int iters = static_cast<int>(std::clamp(2e-2 / std::max(once, 1e-7), 2.0, 2000.0));
    std::vector<double> mpi_times;
    std::vector<std::vector<double>> times(algorithms.size());
    auto timed = [&](auto&& call) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      for (int k = 0; k < iters; ++k) call();
      double mine = (MPI_Wtime() - start) / iters, slowest = 0;
      MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      return slowest;
    };
    for (int rep = 0; rep < reps; ++rep) {
      mpi_times.push_back(timed(mpi_call));
      for (std::size_t a = 0; a < algorithms.size(); ++a) {
        collective::AllToAllOptions options;
        options.algorithm = algorithms[a];
        times[a].push_back(timed([&] {
          comm.all_to_all(send.data(), recv.data(), count, collective::DataType::kInt8, options);
        }));
      }
    }
    // The last call's result, checked: block q came from rank q.
    for (std::size_t q = 0; q < p; ++q) {
      const auto expected = static_cast<std::int8_t>((rank * count) * 7 + q);
      if (recv[q * count] != expected) {
        std::fprintf(stderr, "alltoall_timing: rank %d block %zu wrong\n", rank, q);
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
    }
    const Algorithm picked = comm.choose_algorithm(collective::CollectiveKind::kAllToAll, count,
                                                   collective::DataType::kInt8);
    if (rank == 0) {
      const double mpi = median(mpi_times);
      std::printf("%10zu %10zu %12.2f", p * count, count, mpi * 1e6);
      for (const auto& t : times) std::printf(" %12.2f %8.2f", median(t) * 1e6, mpi / median(t));
      std::printf("  %s\n", std::string(collective::to_string(picked)).c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
