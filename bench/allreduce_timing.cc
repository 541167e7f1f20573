// allreduce_timing: a benchmark (never run as a test) of float32 SUM
// all-reduce: the library's algorithms against Open MPI's own MPI_Allreduce,
// alternating in the same run, with the machine's copy bandwidth measured
// alongside. Commands and results are in docs/performance.md (current
// results) and docs/performance_history.md.
//
//   mpirun -np 2 --bind-to core allreduce_timing [--min-bytes 8] [--max-bytes 256M]
//       [--reps 7] [--algorithms auto,shared_memory,ring] [--allocated] [--in-place]
//       [--also-allocated]
//
// --allocated puts every buffer in Communicator::allocate memory;
// --also-allocated adds a column: AUTO from such buffers, beside the others
// on ordinary ones (the gain of skipping the copy into the segment).
//
// For each size and each repetition every variant runs `iters` calls in
// turn (MPI first, then the library's, then the copy); a variant's time is
// the slowest rank's mean over its calls; the table shows medians over the
// repetitions. busbw = bytes / time * 2(p-1)/p (as nccl-tests). The copy
// column is the time every rank needs, all at once, to memcpy its buffer
// to another: the memory traffic of reading the input and writing the
// output once, which no all-reduce can avoid.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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
  std::size_t max_bytes = std::size_t{256} << 20;
  int reps = 7;
  std::vector<Algorithm> algorithms = {Algorithm::kAuto};
  bool allocated = false;
  bool also_allocated = false;
  bool in_place = false;
  double target_seconds = 0.05;  // per variant and repetition
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
    if (arg == "--min-bytes") options.min_bytes = parse_bytes(next());
    else if (arg == "--max-bytes") options.max_bytes = parse_bytes(next());
    else if (arg == "--reps") options.reps = std::atoi(next());
    else if (arg == "--seconds") options.target_seconds = std::atof(next());
    else if (arg == "--allocated") options.allocated = true;
    else if (arg == "--also-allocated") options.also_allocated = true;
    else if (arg == "--in-place") options.in_place = true;
    else if (arg == "--algorithms") {
      options.algorithms.clear();
      std::string list = next();
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

void fill(float* data, std::size_t count, int rank) {
  for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<float>((i % 251) + rank);
}

// Integer-valued inputs: the sum is exact whatever the order.
bool check(const float* data, std::size_t count, int size) {
  for (std::size_t i = 0; i < count; ++i) {
    const float expected =
        static_cast<float>((i % 251) * size + static_cast<std::size_t>(size * (size - 1) / 2));
    if (data[i] != expected) return false;
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

  const std::size_t max_count = std::max<std::size_t>(1, options.max_bytes / sizeof(float));
  float* send = nullptr;
  float* recv = nullptr;
  std::vector<float> send_vector;
  std::vector<float> recv_vector;
  if (options.allocated) {
    send = static_cast<float*>(world.allocate(max_count * sizeof(float)));
    recv = static_cast<float*>(world.allocate(max_count * sizeof(float)));
  } else {
    send_vector.resize(max_count);
    recv_vector.resize(max_count);
    send = send_vector.data();
    recv = recv_vector.data();
  }
  std::vector<float> copy_target(max_count);
  float* shared_send = nullptr;
  float* shared_recv = nullptr;
  if (options.also_allocated) {
    shared_send = static_cast<float*>(world.allocate(max_count * sizeof(float)));
    shared_recv = static_cast<float*>(world.allocate(max_count * sizeof(float)));
  }
  std::memset(recv, 0, max_count * sizeof(float));

  if (rank == 0) {
    double load[3] = {0, 0, 0};
    if (FILE* file = std::fopen("/proc/loadavg", "r")) {
      if (std::fscanf(file, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
      std::fclose(file);
    }
    std::printf(
        "# allreduce_timing: libcollective %s (%s), %d ranks, float32 sum, %s%s, "
        "median of %d reps, load average %.2f %.2f %.2f\n",
        collective::version_string(), collective::git_revision(), size,
        options.allocated ? "buffers from Communicator::allocate" : "ordinary buffers",
        options.in_place ? ", in place" : "", options.reps, load[0], load[1], load[2]);
    std::printf("# %s", world.topology().describe().c_str());
    std::printf("%12s %10s %10s", "bytes", "mpi_us", "mpi_busbw");
    for (const Algorithm algorithm : options.algorithms) {
      std::printf(" %14s %9s %7s", (std::string(to_string(algorithm)) + "_us").c_str(), "busbw",
                  "x_mpi");
    }
    if (options.also_allocated) std::printf(" %14s %7s %7s", "allocated_us", "x_mpi", "x_copy");
    std::printf(" %10s %8s %s\n", "copy_us", "x_copy", "auto_ran");
  }

  bool all_correct = true;
  for (std::size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 2) {
    const std::size_t count = std::max<std::size_t>(1, bytes / sizeof(float));
    const std::size_t real_bytes = count * sizeof(float);
    // Enough calls to fill the target time, as the slowest rank measured.
    fill(send, count, rank);
    double probe = timed(comm, 1, [&] {
      MPI_Allreduce(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm);
    });
    int iters =
        static_cast<int>(std::clamp(options.target_seconds / std::max(probe, 1e-7), 1.0, 20000.0));
    MPI_Bcast(&iters, 1, MPI_INT, 0, comm);

    std::vector<double> mpi_times;
    std::vector<std::vector<double>> library_times(options.algorithms.size());
    std::vector<double> copy_times;
    std::vector<double> allocated_times;
    std::string auto_ran = "-";
    for (int rep = 0; rep < options.reps; ++rep) {
      fill(send, count, rank);
      const float* input = options.in_place ? recv : send;
      if (options.in_place) std::memcpy(recv, send, real_bytes);
      mpi_times.push_back(timed(comm, iters, [&] {
        MPI_Allreduce(options.in_place ? MPI_IN_PLACE : send, recv, static_cast<int>(count),
                      MPI_FLOAT, MPI_SUM, comm);
      }));
      for (std::size_t a = 0; a < options.algorithms.size(); ++a) {
        collective::AllReduceOptions call;
        call.algorithm = options.algorithms[a];
        if (rep == 0) {
          // Correctness once per size and variant (outside the timing).
          fill(send, count, rank);
          if (options.in_place) std::memcpy(recv, send, real_bytes);
          world.all_reduce(input, recv, count, collective::DataType::kFloat32, call);
          int ok = check(recv, count, size) ? 1 : 0;
          MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
          if (!ok) {
            all_correct = false;
            if (rank == 0) {
              std::printf("# WRONG RESULT: %s at %zu bytes\n",
                          std::string(to_string(options.algorithms[a])).c_str(), real_bytes);
            }
          }
          if (options.algorithms[a] == Algorithm::kAuto) {
            auto_ran = std::string(to_string(world.last_algorithm()));
          }
        }
        library_times[a].push_back(timed(comm, iters, [&] {
          world.all_reduce(input, recv, count, collective::DataType::kFloat32, call);
        }));
      }
      if (options.also_allocated) {
        fill(shared_send, count, rank);
        if (rep == 0) {
          world.all_reduce(shared_send, shared_recv, count, collective::DataType::kFloat32);
          int ok = check(shared_recv, count, size) ? 1 : 0;
          MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
          if (!ok) {
            all_correct = false;
            if (rank == 0)
              std::printf("# WRONG RESULT: allocated buffers at %zu bytes\n", real_bytes);
          }
        }
        allocated_times.push_back(timed(comm, iters, [&] {
          world.all_reduce(shared_send, shared_recv, count, collective::DataType::kFloat32);
        }));
      }
      copy_times.push_back(timed(comm, iters, [&] {
        std::memcpy(copy_target.data(), send, real_bytes);
        // Keep the copy from being optimized away.
        asm volatile("" : : "r"(copy_target.data()) : "memory");
      }));
    }
    if (rank == 0) {
      const double factor = 2.0 * (size - 1) / size;
      auto busbw = [&](double seconds) { return real_bytes / seconds * factor / 1e9; };
      const double mpi = median(mpi_times);
      std::printf("%12zu %10.2f %10.3f", real_bytes, mpi * 1e6, busbw(mpi));
      for (std::size_t a = 0; a < options.algorithms.size(); ++a) {
        const double t = median(library_times[a]);
        std::printf(" %14.2f %9.3f %7.2f", t * 1e6, busbw(t), mpi / t);
      }
      const double copy = median(copy_times);
      if (options.also_allocated) {
        const double t = median(allocated_times);
        std::printf(" %14.2f %7.2f %7.2f", t * 1e6, mpi / t, t / copy);
      }
      std::printf(" %10.2f %8.2f %s\n", copy * 1e6, median(library_times[0]) / copy,
                  auto_ran.c_str());
      std::fflush(stdout);
    }
    if (bytes == 0) break;
  }
  if (options.allocated) {
    world.deallocate(send);
    world.deallocate(recv);
  }
  world.deallocate(shared_send);
  world.deallocate(shared_recv);
  MPI_Comm_free(&comm);
  if (rank == 0 && !all_correct) std::printf("# FAILED: wrong results above\n");
  return all_correct ? 0 : 1;
}
