// Misuse from outside, in real processes under mpirun (issue 13): each
// scenario checks what every rank must see and exits non-zero on any rank
// that saw something else, so mpirun (and ctest) fail.
//
//   collective_misuse_worker differs <VARIABLE>
//       the ranks were started with different values of VARIABLE (an MPMD
//       command line); Communicator::world() must raise
//       InvalidArgumentError naming it, on every rank.
//   local_differs
//       the ranks differ only in parameters that may differ; world() and a
//       ring all_reduce must work.
//   malformed <VARIABLE>
//       VARIABLE holds a malformed value; world() must raise
//       InvalidArgumentError naming VARIABLE=value.
//   after_finalize <algorithm>
//       a call, MPI_Finalize, then the same collective, split and
//       Environment::host_name must raise InvalidArgumentError ("finalized").
//   host_name_before_init
//       Environment::host_name() before MPI is initialized must raise, and
//       work once it is.
//   environment_after_finalize
//       an Environment, destroyed (MPI finalized), then another: it must
//       raise InvalidArgumentError naming Environment (MPI cannot start
//       again).
//   second_environment
//       a second Environment beside the first must raise, and the first
//       must keep working (an all_reduce, every element checked).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace {

using namespace collective;

int g_rank = -1;
int g_failures = 0;

void fail(const std::string& what) {
  std::fprintf(stderr, "FAIL rank %d: %s\n", g_rank, what.c_str());
  ++g_failures;
}

// `call` must raise InvalidArgumentError containing every needle.
template <typename Call>
void expect_invalid(const std::string& what, Call&& call, std::vector<std::string> needles) {
  try {
    call();
    fail(what + " returned; expected InvalidArgumentError");
  } catch (const InvalidArgumentError& error) {
    for (const std::string& needle : needles) {
      if (std::string(error.what()).find(needle) == std::string::npos) {
        fail(what + ": '" + needle + "' missing from: " + error.what());
      }
    }
    std::printf("rank %d: %s raised: %s\n", g_rank, what.c_str(), error.what());
  } catch (const std::exception& error) {
    fail(what + ": wrong error class: " + error.what());
  }
}

// A ring all_reduce of 300000 floats (several ring segments), every
// element checked.
void expect_ring_sum(Communicator& world, const std::string& what) {
  const int size = world.size();
  std::vector<float> values(300000);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(world.rank() + i % 7);
  AllReduceOptions options;
  options.algorithm = Algorithm::kRing;
  world.all_reduce(values.data(), values.data(), values.size(), DataType::kFloat32, options);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float expected =
        static_cast<float>(size * (size - 1) / 2 + size * static_cast<int>(i % 7));
    if (values[i] != expected) {
      fail(what + ": index " + std::to_string(i) + " expected " + std::to_string(expected) +
           " got " + std::to_string(values[i]));
      return;
    }
  }
}

int run(const std::string& scenario, const std::string& argument, int& argc, char**& argv) {
  if (scenario == "host_name_before_init") {
    expect_invalid("Environment::host_name before MPI_Init", [] { (void)Environment::host_name(); },
                   {"Environment::host_name", "MPI is not initialized"});
    Environment environment(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    if (Environment::host_name().empty()) fail("host_name is empty after MPI_Init");
    return g_failures;
  }

  if (scenario == "environment_after_finalize") {
    {
      Environment environment(argc, argv);
      MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
      Communicator world = Communicator::world();
      expect_ring_sum(world, "ring all_reduce before the Environment ends");
    }
    expect_invalid("an Environment after the first one finalized MPI",
                   [&] { Environment again(argc, argv); },
                   {"Environment (rank " + std::to_string(g_rank) + ")", "MPI is already finalized",
                    "cannot be initialized again"});
    expect_invalid("Environment() after MPI_Finalize", [] { Environment again; },
                   {"Environment", "cannot be initialized again"});
    return g_failures;
  }
  if (scenario == "second_environment") {
    Environment environment(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    expect_invalid("a second Environment", [&] { Environment second(argc, argv); },
                   {"Environment (rank " + std::to_string(g_rank) + ")",
                    "an Environment already exists in this process"});
    if (!Environment::initialized()) fail("the refused second Environment ended MPI");
    Communicator world = Communicator::world();
    expect_ring_sum(world, "ring all_reduce after the refused second Environment");
    world.free();
    return g_failures;
  }

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  if (scenario == "differs") {
    expect_invalid(
        "Communicator::world with " + argument + " different between ranks",
        [] { (void)Communicator::world(); },
        {"Communicator::world", argument + " differs", "must be the same on every rank"});
  } else if (scenario == "local_differs") {
    Communicator world = Communicator::world();
    expect_ring_sum(world, "ring all_reduce with per-rank local parameters");
  } else if (scenario == "malformed") {
    const char* value = std::getenv(argument.c_str());
    expect_invalid("Communicator::world with a malformed " + argument,
                   [] { (void)Communicator::world(); }, {argument + "=" + (value ? value : "")});
  } else if (scenario == "after_finalize") {
    const std::optional<Algorithm> algorithm = parse_algorithm(argument);
    if (!algorithm) {
      fail("unknown algorithm " + argument);
      MPI_Finalize();
      return g_failures;
    }
    Communicator world = Communicator::world();
    std::vector<double> values(1024, 1.0);
    AllReduceOptions options;
    options.algorithm = *algorithm;
    world.all_reduce(values.data(), values.data(), values.size(), DataType::kFloat64, options);
    if (values[0] != world.size()) fail("the all_reduce before MPI_Finalize is wrong");
    MPI_Finalize();
    expect_invalid(argument + " all_reduce after MPI_Finalize",
                   [&] {
                     world.all_reduce(values.data(), values.data(), values.size(),
                                      DataType::kFloat64, options);
                   },
                   {"all_reduce", "MPI is already finalized"});
    expect_invalid("barrier after MPI_Finalize", [&] { world.barrier(); },
                   {"barrier", "MPI is already finalized"});
    expect_invalid("split after MPI_Finalize", [&] { (void)world.split(0, 0); },
                   {"Communicator::split", "MPI is already finalized"});
    expect_invalid("Communicator::world after MPI_Finalize", [] { (void)Communicator::world(); },
                   {"Communicator::world", "MPI is already finalized"});
    expect_invalid("Environment::host_name after MPI_Finalize",
                   [] { (void)Environment::host_name(); },
                   {"Environment::host_name", "MPI is already finalized"});
    return g_failures;
  } else {
    fail("unknown scenario " + scenario);
  }
  MPI_Finalize();
  return g_failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <scenario> [argument]\n", argv[0]);
    return 2;
  }
  const std::string scenario = argv[1];
  const std::string argument = argc > 2 ? argv[2] : "";
  const int failures = run(scenario, argument, argc, argv);
  if (failures == 0)
    std::printf("PASS rank %d: %s %s\n", g_rank, scenario.c_str(), argument.c_str());
  return failures == 0 ? 0 : 1;
}
