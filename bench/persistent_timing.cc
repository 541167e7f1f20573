// persistent_timing: the latency of a small all-reduce made three ways,
// alternating in one run: a persistent plan (Communicator::all_reduce_init,
// start + wait), all_reduce_async + wait (the same progress-thread path
// without the plan), the blocking Communicator::all_reduce, and
// MPI_Allreduce.
// Prints, per way, the median over rounds of each round's mean per call
// (docs/performance.md, "Calls in flight"; tables in
// docs/performance_history.md). Results are checked exactly.
//
//   persistent_timing [--bytes 8] [--iterations 2000] [--rounds 15]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t bytes = 8;
  int iterations = 2000;
  int rounds = 15;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--bytes") bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--iterations") iterations = std::atoi(argv[i + 1]);
    else if (flag == "--rounds") rounds = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "persistent_timing: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  collective::Environment environment(argc, argv);
  collective::Communicator comm = collective::Communicator::world();
  const std::size_t count = std::max<std::size_t>(1, bytes / sizeof(float));
  std::vector<float> send(count), recv(count);
  for (std::size_t i = 0; i < count; ++i) send[i] = static_cast<float>(comm.rank() + 1);
  const float expected = static_cast<float>(comm.size() * (comm.size() + 1) / 2);
  MPI_Comm mpi = MPI_Comm_f2c(comm.to_mpi());
  collective::Plan plan =
      comm.all_reduce_init(send.data(), recv.data(), count, collective::DataType::kFloat32);
  const auto check = [&](const char* way) {
    for (std::size_t i = 0; i < count; ++i) {
      if (recv[i] != expected) {
        std::fprintf(stderr, "persistent_timing: rank %d %s index %zu expected %g actual %g\n",
                     comm.rank(), way, i, expected, recv[i]);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
    std::fill(recv.begin(), recv.end(), -1.0f);
  };
  constexpr int kWays = 4;
  const char* names[kWays] = {"plan start+wait", "async+wait", "blocking all_reduce",
                              "MPI_Allreduce"};
  const auto once = [&](int way) {
    if (way == 0) {
      plan.start().wait();
    } else if (way == 1) {
      comm.all_reduce_async(send.data(), recv.data(), count, collective::DataType::kFloat32).wait();
    } else if (way == 2) {
      comm.all_reduce(send.data(), recv.data(), count, collective::DataType::kFloat32);
    } else {
      MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, mpi);
    }
  };
  std::vector<double> per_call[kWays];
  for (int way = 0; way < kWays; ++way) {  // warm-up
    for (int i = 0; i < 200; ++i) once(way);
    check(names[way]);
  }
  for (int round = 0; round < rounds; ++round) {
    for (int step = 0; step < kWays; ++step) {
      const int way = (round + step) % kWays;  // alternating, each way in every slot
      MPI_Barrier(mpi);
      const double start = MPI_Wtime();
      for (int i = 0; i < iterations; ++i) once(way);
      double elapsed = MPI_Wtime() - start;
      MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, mpi);
      per_call[way].push_back(elapsed / iterations * 1e6);
      check(names[way]);
    }
  }
  if (comm.rank() == 0) {
    const double mpi_us = median(per_call[3]);
    std::printf("persistent_timing: %d ranks, %zu B float32 sum, %d x %d calls per way\n",
                comm.size(), count * sizeof(float), rounds, iterations);
    for (int way = 0; way < kWays; ++way) {
      const double us = median(per_call[way]);
      std::printf("  %-20s %8.2f us   %.2fx MPI_Allreduce\n", names[way], us, mpi_us / us);
    }
  }
  return 0;
}
