// Latency of small all_reduce calls, for measuring what the cross-rank
// check costs: run it with COLLECTIVE_VALIDATE=1 and =0, alternating (see
// measure_validation_cost.sh). Also times MPI_Allreduce in the same run as
// the reference. Not a test: prints medians, one line per configuration.
// `auto` is what a caller gets (on one node: shared_memory, whose check
// goes through the node segment and, up to 4,112 B, rides with the input).
//
//   mpirun -np 4 collective_validation_cost [iterations] [repeats]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "collective/collective.h"

namespace {

using Clock = std::chrono::steady_clock;

// Median over `repeats` of the mean microseconds per call of `iterations`
// calls, the clock started after a barrier; rank 0's view of the slowest
// rank.
double median_microseconds(int iterations, int repeats, const std::function<void()>& call) {
  std::vector<double> samples;
  for (int repeat = 0; repeat < repeats; ++repeat) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = Clock::now();
    for (int i = 0; i < iterations; ++i) call();
    const double local =
        std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iterations;
    double slowest = 0;
    MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    samples.push_back(slowest);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  collective::Environment environment(argc, argv);
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 11;
  auto comm = collective::Communicator::world();
  const char* validate = std::getenv("COLLECTIVE_VALIDATE");
  for (std::size_t count : {std::size_t{1}, std::size_t{256}, std::size_t{16384}}) {
    std::vector<float> in(count, 1.0f), out(count, 0.0f);
    for (int i = 0; i < 200; ++i)
      comm.all_reduce(in.data(), out.data(), count, collective::DataType::kFloat32);
    for (collective::Algorithm algorithm :
         {collective::Algorithm::kAuto, collective::Algorithm::kRecursiveDoubling,
          collective::Algorithm::kMpi}) {
      collective::AllReduceOptions options;
      options.algorithm = algorithm;
      const double ours = median_microseconds(iterations, repeats, [&] {
        comm.all_reduce(in.data(), out.data(), count, collective::DataType::kFloat32, options);
      });
      const double mpi = median_microseconds(iterations, repeats, [&] {
        MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      });
      if (comm.rank() == 0) {
        std::printf(
            "ranks=%d validate=%s bytes=%zu algorithm=%s us_per_call=%.2f mpi_allreduce_us=%.2f\n",
            comm.size(), validate ? validate : "default", count * 4,
            std::string(collective::to_string(algorithm)).c_str(), ours, mpi);
      }
    }
  }
  return 0;
}
