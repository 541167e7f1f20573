// The parameter-server transport on a /dev/shm too small for a same-node
// staging segment (run by tests/reliability/small_shm_test.sh in a mount
// namespace whose /dev/shm is a 1 MiB tmpfs): rank 0 coordinates, rank 1
// is the ps, ranks 2.. are workers. A 2 MiB variable's payloads would be staged
// in a 2 MiB segment, which cannot be reserved:
//   - the chief's read raises CommunicationError naming the segment, its
//     size and /dev/shm's free space (before: SIGBUS at the first copy);
//   - a worker's update inside a closure raises the same on the worker,
//     and the chief's fetch raises ClosureError carrying it;
//   - small payloads (messages) still work, and every rank ends normally.
// Every rank checks its own part and exits 1 on a failure; the chief prints
// "PASS ps_small_shm" when everything it saw was right.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "collective/collective.h"
#include "collective/distribute/distribute.h"

namespace cd = collective::distribute;

namespace {

constexpr std::int64_t kLargeElements = std::int64_t{1} << 19;  // 2 MiB of float32
int failures = 0;

void check(bool ok, int rank, const std::string& what) {
  if (!ok) {
    ++failures;
    std::printf("FAIL ps_small_shm rank %d: %s\n", rank, what.c_str());
    std::fflush(stdout);
  }
}

// The segment's error: its name, its size, /dev/shm's free space, the way out.
void check_staging_error(const std::string& message, int rank, const std::string& where) {
  for (const std::string& needle :
       {std::string("/collective-ps-"), std::string("2097152 bytes"),
        std::string("bytes free in /dev/shm"), std::string("COLLECTIVE_PS_SHARED_MEMORY=0")}) {
    check(message.find(needle) != std::string::npos, rank,
          where + ": the error does not mention \"" + needle + "\": " + message);
  }
}

}  // namespace

int main(int argc, char** argv) {
  collective::Environment environment(argc, argv);
  auto world = collective::Communicator::world();
  const int rank = world.rank();
  cd::RemoteFunctions functions;
  const auto push_large = functions.add("push_large", [rank](cd::ClosureArguments& args) {
    try {
      args.variable(0).assign_add(cd::Tensor(collective::DataType::kFloat32, {kLargeElements}));
      check(false, rank, "the worker's staged update of 2 MiB worked in a 1 MiB /dev/shm");
    } catch (const collective::CommunicationError& error) {
      check_staging_error(error.what(), rank, "the worker's update");
      check(std::string(error.what()).find("(rank " + std::to_string(rank) + ")") !=
                std::string::npos,
            rank, std::string("the worker's error does not name its rank: ") + error.what());
      throw;
    }
    return cd::Tensor();
  });
  const auto add_small = functions.add("add_small", [](cd::ClosureArguments& args) {
    args.variable(0).assign_add(cd::Tensor(std::vector<float>{1, 2, 3}, {3}));
    return cd::Tensor();
  });
  cd::MPIClusterResolver resolver(world, 1);
  if (world.size() < 3) {
    std::printf("FAIL ps_small_shm: needs at least 3 ranks (chief, ps, worker), got %d\n",
                world.size());
    return 1;
  }
  cd::ParameterServerStrategy strategy(resolver, functions);
  if (!strategy.is_coordinator()) return failures == 0 ? 0 : 1;  // served until the chief shut down
  try {
    auto scope = strategy.scope();
    cd::Variable large(cd::Tensor(collective::DataType::kFloat32, {kLargeElements}),
                       {.name = "large"});
    cd::Variable small(cd::Tensor(std::vector<float>{10, 20, 30}, {3}), {.name = "small"});
    try {
      (void)large.value();
      check(false, rank, "the chief's staged read of 2 MiB worked in a 1 MiB /dev/shm");
    } catch (const collective::CommunicationError& error) {
      check_staging_error(error.what(), rank, "the chief's read");
      std::printf("chief: %s\n", error.what());
      check(std::string(error.what()).find("(rank 0)") != std::string::npos, rank,
            std::string("the chief's error does not name its rank: ") + error.what());
    }
    cd::ClusterCoordinator coordinator(strategy);
    const cd::RemoteValue pushed = coordinator.schedule(push_large, {large});
    try {
      (void)pushed.fetch();
      check(false, rank, "the closure's staged update returned");
    } catch (const cd::ClosureError& error) {
      check_staging_error(error.what(), rank, "the chief's fetch");
    }
    try {
      coordinator.join();
    } catch (const cd::ClosureError&) {
      // join() raises the closure's error once more; it was checked above.
    }
    // Payloads that travel as messages are unaffected.
    coordinator.schedule(add_small, {small});
    coordinator.join();
    const cd::Tensor value = small.value();
    const std::vector<float> expected = {11, 22, 33};
    for (std::size_t i = 0; i < expected.size(); ++i) {
      check(value.values<float>()[i] == expected[i], rank,
            "small[" + std::to_string(i) + "] is " + std::to_string(value.values<float>()[i]) +
                ", expected " + std::to_string(expected[i]));
    }
  } catch (const std::exception& error) {
    check(false, rank, std::string("unexpected error: ") + error.what());
  }
  if (failures == 0) std::printf("PASS ps_small_shm\n");
  std::fflush(stdout);
  return failures == 0 ? 0 : 1;
}
