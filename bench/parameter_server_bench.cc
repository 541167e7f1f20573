// collective_ps_bench: what the parameter-server layer costs, measured
// against the peer a user would compare with, in the same run.
//
//   mpirun -n 4 --oversubscribe --bind-to none collective_ps_bench [--rounds R] [--closures N]
//                                                                  [--reps K] [--in-flight F]
//
// Rank 0 coordinates, rank 1 is the ps, the rest are workers. Each round:
//  1. every rank runs --reps all-reduces of 1 MiB float32 with libcollective
//     (AUTO) and with MPI_Allreduce, alternating;
//  2. a ParameterServerStrategy session: N empty closures scheduled at once
//     and joined (closures per second), then worker 0 runs --reps pulls +
//     pushes (value() then assign_add) of a 1 MiB float32 variable, timed
//     on the worker (pull and push also alone), through the same-node
//     shared-memory staging;
//     and the round trip alone (reads of a one-element variable);
//  3. the same pulls and pushes in a session with same-node shared memory
//     off (every payload an MPI message).
// Prints the medians over rounds and the ratio pull+push / all-reduce.
// Exits non-zero when a pulled value is wrong.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "collective/distribute/distribute.h"

namespace cd = collective::distribute;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr std::size_t kFloats = (1 << 20) / sizeof(float);

}  // namespace

int main(int argc, char** argv) {
  collective::Environment environment(argc, argv);
  int rounds = 5;
  int closures = 20000;
  int reps = 20;
  int in_flight = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (flag == "--closures") closures = std::atoi(argv[i + 1]);
    else if (flag == "--reps") reps = std::atoi(argv[i + 1]);
    else if (flag == "--in-flight") in_flight = std::atoi(argv[i + 1]);
    else {
      std::fprintf(
          stderr,
          "usage: collective_ps_bench [--rounds R] [--closures N] [--reps K] [--in-flight F]\n");
      return 2;
    }
  }
  auto world = collective::Communicator::world();
  if (world.size() < 3) {
    if (world.rank() == 0) std::fprintf(stderr, "collective_ps_bench needs at least 3 ranks\n");
    return 2;
  }
  cd::RemoteFunctions functions;
  const auto empty = functions.add("empty", [](cd::ClosureArguments&) { return cd::Tensor(); });
  const int timed_reps = reps;
  const auto pull_push = functions.add("pull_push", [timed_reps](cd::ClosureArguments& args) {
    cd::Variable variable = args.variable(0);
    const cd::Tensor delta = args.tensor(1);
    std::vector<double> times, pulls, pushes;
    double wrong = 0;
    for (int r = 0; r < timed_reps + 2; ++r) {
      const Clock::time_point start = Clock::now();
      const cd::Tensor value = variable.value();
      const double pulled = seconds_since(start);
      variable.assign_add(delta);
      const double t = seconds_since(start);
      if (r >= 2) {  // two warm-up pairs
        times.push_back(t);
        pulls.push_back(pulled);
        pushes.push_back(t - pulled);
      }
      if (value.values<float>()[kFloats - 1] != static_cast<float>(r)) ++wrong;
    }
    // The round trip alone: reads of a one-element variable (a request and
    // a reply carrying a few bytes in their headers' messages).
    cd::Variable small = args.variable(2);
    std::vector<double> trips;
    for (int r = 0; r < timed_reps + 2; ++r) {
      const Clock::time_point start = Clock::now();
      (void)small.value();
      if (r >= 2) trips.push_back(seconds_since(start));
    }
    return cd::Tensor(
        std::vector<double>{median(times), wrong, median(pulls), median(pushes), median(trips)},
        {5});
  });

  std::vector<float> send(kFloats, 1.0f), receive(kFloats);
  std::vector<double> collective_times, mpi_times, closure_rates;
  // [0]: same-node shared memory on, [1]: off.
  std::vector<double> pull_push_times[2], pull_times[2], push_times[2], round_trip_times[2];
  bool failed = false;
  for (int round = 0; round < rounds; ++round) {
    // 1. All-reduce of 1 MiB at the same rank count, alternating with MPI.
    for (int r = 0; r < reps + 2; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      Clock::time_point start = Clock::now();
      world.all_reduce(send.data(), receive.data(), kFloats, collective::DataType::kFloat32);
      double t = seconds_since(start);
      double slowest = 0;
      MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (r >= 2) collective_times.push_back(slowest);
      MPI_Barrier(MPI_COMM_WORLD);
      start = Clock::now();
      MPI_Allreduce(send.data(), receive.data(), static_cast<int>(kFloats), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      t = seconds_since(start);
      MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (r >= 2) mpi_times.push_back(slowest);
    }
    // 2. and 3. Parameter-server sessions, shared memory on, then off.
    for (int mode = 0; mode < 2; ++mode) {
      cd::MPIClusterResolver resolver(world, 1);
      cd::ParameterServerOptions options;
      options.closures_in_flight_per_worker = in_flight;
      options.same_node_shared_memory = mode == 0;
      cd::ParameterServerStrategy strategy(resolver, functions, options);
      if (!strategy.is_coordinator()) continue;
      cd::ClusterCoordinator coordinator(strategy);
      if (mode == 0) {
        const Clock::time_point start = Clock::now();
        for (int c = 0; c < closures; ++c) coordinator.schedule(empty);
        coordinator.join();
        closure_rates.push_back(closures / seconds_since(start));
      }
      auto scope = strategy.scope();
      cd::Variable variable(
          cd::Tensor(collective::DataType::kFloat32, {static_cast<std::int64_t>(kFloats)}));
      const cd::Tensor ones(std::vector<float>(kFloats, 1.0f),
                            {static_cast<std::int64_t>(kFloats)});
      cd::Variable small(cd::Tensor(collective::DataType::kFloat32, {1}));
      const cd::Tensor result = coordinator.schedule(pull_push, {variable, ones, small}).fetch();
      pull_push_times[mode].push_back(result.values<double>()[0]);
      pull_times[mode].push_back(result.values<double>()[2]);
      push_times[mode].push_back(result.values<double>()[3]);
      round_trip_times[mode].push_back(result.values<double>()[4]);
      if (result.values<double>()[1] != 0) failed = true;
    }
  }
  if (world.rank() == 0) {
    const double ar = median(collective_times);
    const double mpi = median(mpi_times);
    std::printf("# collective_ps_bench: %d ranks (chief, 1 ps, %d workers), %d rounds, medians\n",
                world.size(), world.size() - 2, rounds);
    std::printf("empty closures: %d per round, %d in flight per worker, %.0f closures/s (rounds: ",
                closures, in_flight, median(closure_rates));
    for (double r : closure_rates) std::printf("%.0f ", r);
    std::printf(")\n");
    const char* modes[2] = {"same-node shared memory", "MPI messages"};
    for (int mode = 0; mode < 2; ++mode) {
      const double pp = median(pull_push_times[mode]);
      std::printf(
          "1 MiB float32, %s: worker pull+push %.1f us (pull %.1f us, push %.1f us, 4-byte read "
          "round "
          "trip %.1f us), all_reduce %.1f us (libcollective AUTO), %.1f us (MPI_Allreduce); "
          "pull+push / all_reduce = %.2f (vs MPI %.2f)\n",
          modes[mode], pp * 1e6, median(pull_times[mode]) * 1e6, median(push_times[mode]) * 1e6,
          median(round_trip_times[mode]) * 1e6, ar * 1e6, mpi * 1e6, pp / ar, pp / mpi);
    }
    if (failed) std::printf("WRONG: a pulled value differed from the expected count\n");
  }
  return failed ? 1 : 0;
}
