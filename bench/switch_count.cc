// switch_count: where a small all-reduce's time goes when ranks share
// cores (a benchmark, never run as a test). Each rank loops `calls`
// all-reduces of `count` float32 (the library's, `shared_memory` or AUTO, or
// MPI_Allreduce) and prints per call: the time, the user and system CPU time
// (getrusage) and the context switches the kernel counted
// (/proc/self/status). docs/performance.md, "More ranks than cores".
//
//   mpirun -np 4 --oversubscribe --bind-to core:overload-allowed switch_count
//       [--mpi | --auto] [--calls 20000] [--count 2]
#include <mpi.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace {

long status_field(const char* name) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::size_t length = std::strlen(name);
  while (std::getline(status, line)) {
    if (line.compare(0, length, name) == 0) return std::atol(line.c_str() + length);
  }
  return -1;
}

struct Sample {
  double user_us = 0;
  double system_us = 0;
  long voluntary = 0;
  long involuntary = 0;
};

Sample sample() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  Sample now;
  now.user_us = static_cast<double>(usage.ru_utime.tv_sec) * 1e6 +
                static_cast<double>(usage.ru_utime.tv_usec);
  now.system_us = static_cast<double>(usage.ru_stime.tv_sec) * 1e6 +
                  static_cast<double>(usage.ru_stime.tv_usec);
  now.voluntary = status_field("voluntary_ctxt_switches:");
  now.involuntary = status_field("nonvoluntary_ctxt_switches:");
  return now;
}

}  // namespace

int main(int argc, char** argv) {
  collective::Environment environment(argc, argv);
  bool use_mpi = false;
  collective::AllReduceOptions options;
  options.algorithm = collective::Algorithm::kSharedMemory;
  int calls = 20000;
  std::size_t count = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--mpi") {
      use_mpi = true;
    } else if (arg == "--auto") {
      options.algorithm = collective::Algorithm::kAuto;
    } else if (arg == "--calls" && i + 1 < argc) {
      calls = std::atoi(argv[++i]);
    } else if (arg == "--count" && i + 1 < argc) {
      count = static_cast<std::size_t>(std::atol(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--mpi | --auto] [--calls N] [--count N]\n", argv[0]);
      return 2;
    }
  }
  auto world = collective::Communicator::world();
  std::vector<float> in(count, 1.0f), out(count, 0.0f);
  auto one_call = [&] {
    if (use_mpi) {
      MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    } else {
      world.all_reduce(in.data(), out.data(), count, collective::DataType::kFloat32, options);
    }
  };
  for (int i = 0; i < 1000; ++i) one_call();
  MPI_Barrier(MPI_COMM_WORLD);
  const Sample before = sample();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) one_call();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Sample after = sample();
  if (out[0] != static_cast<float>(world.size())) {
    std::fprintf(stderr, "rank %d: wrong result %g, expected %d\n", world.rank(),
                 static_cast<double>(out[0]), world.size());
    return 1;
  }
  const double n = calls;
  const std::string name = use_mpi ? std::string("MPI_Allreduce")
                                   : std::string(collective::to_string(options.algorithm));
  std::printf(
      "%s rank %d: %.2f us/call, user %.2f us, system %.2f us, switches %.2f "
      "(voluntary %.2f, involuntary %.2f) per call\n",
      name.c_str(), world.rank(), seconds * 1e6 / n, (after.user_us - before.user_us) / n,
      (after.system_us - before.system_us) / n,
      static_cast<double>(after.voluntary - before.voluntary + after.involuntary -
                          before.involuntary) /
          n,
      static_cast<double>(after.voluntary - before.voluntary) / n,
      static_cast<double>(after.involuntary - before.involuntary) / n);
  return 0;
}
