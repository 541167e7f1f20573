// alltoall_timing: a benchmark (never run as a test) of all_to_all: the
// library's algorithm (AUTO, or those named) against MPI_Alltoall,
// alternating in the same run, with the copy bound measured alongside.
// Results in docs/performance.md.
//
//   mpirun -np 2 --bind-to core alltoall_timing [--min-bytes 8] [--max-bytes 64M]
//       [--factor 2] [--reps 5] [--seconds 0.03] [--algorithms auto,shared_memory]
//       [--allocated]
//
// Sizes are each rank's whole send buffer (p blocks of bytes / p). For each
// size and repetition every variant runs `iters` calls in turn (MPI first,
// then the library's, then the copy); a variant's time is the slowest
// rank's mean; the table shows medians over the repetitions and x_mpi =
// mpi time / library time (above 1: the library is faster); the best_
// columns are the fastest repetitions' times and ratios, the nearer ones to
// a quiet machine's when other jobs load this one. The copy
// column is the time every rank needs, all at once, to memcpy its send
// buffer into its receive buffer: reading the one and writing the other
// once, which no all_to_all can avoid. --allocated puts the send buffers
// in Communicator::allocate memory (peers read them in place: one copy).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace {

using collective::Algorithm;
using collective::Communicator;

struct Options {
  std::size_t min_bytes = 8;
  std::size_t factor = 2;  // from one size to the next
  std::size_t max_bytes = std::size_t{64} << 20;
  int reps = 5;
  double target_seconds = 0.03;  // per variant and repetition
  std::vector<Algorithm> algorithms = {Algorithm::kAuto};
  bool allocated = false;
};

std::size_t parse_bytes(const char* text) {
  char* end = nullptr;
  double value = std::strtod(text, &end);
  if (*end == 'K' || *end == 'k') value *= 1024;
  if (*end == 'M' || *end == 'm') value *= 1024 * 1024;
  if (*end == 'G' || *end == 'g') value *= 1024.0 * 1024 * 1024;
  return static_cast<std::size_t>(value);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--min-bytes") {
      options.min_bytes = parse_bytes(next());
    } else if (arg == "--max-bytes") {
      options.max_bytes = parse_bytes(next());
    } else if (arg == "--factor") {
      options.factor = std::max<std::size_t>(2, std::strtoull(next(), nullptr, 10));
    } else if (arg == "--reps") {
      options.reps = std::atoi(next());
    } else if (arg == "--seconds") {
      options.target_seconds = std::atof(next());
    } else if (arg == "--allocated") {
      options.allocated = true;
    } else if (arg == "--algorithms") {
      options.algorithms.clear();
      const std::string list = next();
      std::size_t start = 0;
      while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        const auto algorithm = collective::parse_algorithm(list.substr(start, comma - start));
        if (!algorithm) {
          std::fprintf(stderr, "unknown algorithm in %s\n", list.c_str());
          std::exit(2);
        }
        options.algorithms.push_back(*algorithm);
        start = comma + 1;
      }
    } else {
      std::fprintf(stderr, "unknown option %s\n", arg.c_str());
      std::exit(2);
    }
  }
  return options;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Runs `body` `iters` times between barriers; the slowest rank's mean.
template <typename Body>
double timed(MPI_Comm comm, int iters, Body&& body) {
  MPI_Barrier(comm);
  const double start = now();
  for (int i = 0; i < iters; ++i) body();
  double elapsed = (now() - start) / iters;
  MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, comm);
  return elapsed;
}

// Byte i of rank `from`'s block for rank `to`.
unsigned char pattern(int from, int to, std::size_t i) {
  return static_cast<unsigned char>(
      (static_cast<std::size_t>(from) * 31 + static_cast<std::size_t>(to) * 7 + i) % 251);
}

bool check(const unsigned char* recv, std::size_t block, int rank, int size) {
  for (int q = 0; q < size; ++q) {
    for (std::size_t i = 0; i < block; ++i) {
      if (recv[static_cast<std::size_t>(q) * block + i] != pattern(q, rank, i)) return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  collective::Environment environment(argc, argv);
  const Options options = parse(argc, argv);
  Communicator world = Communicator::world();
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const int rank = world.rank();
  const int size = world.size();
  const auto p = static_cast<std::size_t>(size);

  const std::size_t max_bytes = std::max(options.max_bytes, p);
  std::vector<unsigned char> send_vector;
  unsigned char* send = nullptr;
  if (options.allocated) {
    send = static_cast<unsigned char*>(world.allocate(max_bytes));
  } else {
    send_vector.resize(max_bytes);
    send = send_vector.data();
  }
  std::vector<unsigned char> recv(max_bytes, 0);

  if (rank == 0) {
    double load[3] = {0, 0, 0};
    if (FILE* file = std::fopen("/proc/loadavg", "r")) {
      if (std::fscanf(file, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
      std::fclose(file);
    }
    std::printf(
        "# alltoall_timing: libcollective %s (%s), %d ranks, %s send buffers, median of %d reps, "
        "load average %.2f %.2f %.2f\n",
        collective::version_string(), collective::git_revision(), size,
        options.allocated ? "Communicator::allocate" : "ordinary", options.reps, load[0], load[1],
        load[2]);
    std::printf("%12s %10s", "bytes", "mpi_us");
    for (const Algorithm algorithm : options.algorithms) {
      std::printf(" %16s %7s", (std::string(to_string(algorithm)) + "_us").c_str(), "x_mpi");
    }
    std::printf(" %10s %8s %11s %12s %10s %11s %s\n", "copy_us", "x_copy", "best_mpi_us",
                "best_lib_us", "best_x_mpi", "best_x_copy", "auto_ran");
  }

  bool all_correct = true;
  for (std::size_t bytes = std::max(options.min_bytes, p); bytes <= options.max_bytes;
       bytes *= options.factor) {
    const std::size_t block = bytes / p;
    const std::size_t real_bytes = block * p;
    for (std::size_t q = 0; q < p; ++q) {
      for (std::size_t i = 0; i < block; ++i) send[q * block + i] = pattern(rank, int(q), i);
    }
    const double probe = timed(comm, 1, [&] {
      MPI_Alltoall(send, static_cast<int>(block), MPI_BYTE, recv.data(), static_cast<int>(block),
                   MPI_BYTE, comm);
    });
    int iters = static_cast<int>(std::clamp(options.target_seconds / probe, 1.0, 100000.0));
    MPI_Bcast(&iters, 1, MPI_INT, 0, comm);

    std::vector<double> mpi_times;
    std::vector<std::vector<double>> library_times(options.algorithms.size());
    std::vector<double> copy_times;
    for (int rep = 0; rep < options.reps; ++rep) {
      mpi_times.push_back(timed(comm, iters, [&] {
        MPI_Alltoall(send, static_cast<int>(block), MPI_BYTE, recv.data(), static_cast<int>(block),
                     MPI_BYTE, comm);
      }));
      for (std::size_t a = 0; a < options.algorithms.size(); ++a) {
        collective::AllToAllOptions call;
        call.algorithm = options.algorithms[a];
        std::memset(recv.data(), 0, real_bytes);
        library_times[a].push_back(timed(comm, iters, [&] {
          world.all_to_all(send, recv.data(), block, collective::DataType::kUInt8, call);
        }));
        all_correct = all_correct && check(recv.data(), block, rank, size);
      }
      copy_times.push_back(timed(comm, iters, [&] { std::memcpy(recv.data(), send, real_bytes); }));
    }
    collective::AllToAllOptions probe_call;
    world.all_to_all(send, recv.data(), block, collective::DataType::kUInt8, probe_call);
    const std::string ran(to_string(world.last_algorithm()));
    if (rank == 0) {
      const double mpi = median(mpi_times);
      const double copy = median(copy_times);
      std::printf("%12zu %10.2f", real_bytes, mpi * 1e6);
      double first = 0;
      for (std::size_t a = 0; a < options.algorithms.size(); ++a) {
        const double t = median(library_times[a]);
        if (a == 0) first = t;
        std::printf(" %16.2f %7.2f", t * 1e6, mpi / t);
      }
      // The fastest repetitions, of MPI and of the first algorithm.
      const double best_mpi = *std::min_element(mpi_times.begin(), mpi_times.end());
      const double best_lib = *std::min_element(library_times[0].begin(), library_times[0].end());
      const double best_copy = *std::min_element(copy_times.begin(), copy_times.end());
      std::printf(" %10.2f %8.2f %11.2f %12.2f %10.2f %11.2f %s\n", copy * 1e6, first / copy,
                  best_mpi * 1e6, best_lib * 1e6, best_mpi / best_lib, best_lib / best_copy,
                  ran.c_str());
      std::fflush(stdout);
    }
  }
  int correct = all_correct ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &correct, 1, MPI_INT, MPI_MIN, comm);
  if (rank == 0 && !correct) std::printf("# WRONG RESULTS\n");
  if (options.allocated) world.deallocate(send);
  MPI_Comm_free(&comm);
  return correct ? 0 : 1;
}
