// The parameter-server cluster that ps_fault_driver.py harms: rank 0
// coordinates, rank 1 is the ps, ranks 2.. are workers. Every rank prints
// "READY rank=R pid=P role=T" once the strategy is built (servers before
// they start serving). The chief schedules `closures` closures that each
// sleep a little and add 1 to a counter on the ps, then joins and prints
//   RESULT ok=<closures that returned> counter=<value> workers=<w0>,<w1>,...
// or, when join/fetch raise, ERROR class=<class> what=<message>.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "collective/collective.h"
#include "collective/distribute/distribute.h"

namespace cd = collective::distribute;

int main(int argc, char** argv) {
  collective::Environment environment(argc, argv);
  const int closures = argc > 1 ? std::atoi(argv[1]) : 200;
  const int sleep_ms = argc > 2 ? std::atoi(argv[2]) : 10;
  auto world = collective::Communicator::world();
  cd::RemoteFunctions functions;
  const auto increment = functions.add("slow_increment", [sleep_ms](cd::ClosureArguments& args) {
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    args.variable(0).assign_add(cd::Tensor::scalar<std::int64_t>(1));
    return cd::Tensor::scalar<std::int64_t>(args.worker_index());
  });
  cd::MPIClusterResolver resolver(world, 1);
  std::printf("READY rank=%d pid=%d role=%s\n", world.rank(), static_cast<int>(getpid()),
              resolver.task_type().c_str());
  std::fflush(stdout);
  // Servers return from the constructor when the chief shuts down (or
  // raise UnavailableError when the chief stops answering).
  cd::ParameterServerStrategy strategy(resolver, functions);
  if (!strategy.is_coordinator()) {
    std::printf("SERVED rank=%d\n", world.rank());
    std::fflush(stdout);
    return 0;
  }
  // The errors are printed before the strategy's destructor shuts down.
  try {
    auto scope = strategy.scope();
    cd::Variable counter(cd::Tensor::scalar<std::int64_t>(0), {.name = "counter"});
    cd::ClusterCoordinator coordinator(strategy);
    std::vector<cd::RemoteValue> values;
    for (int i = 0; i < closures; ++i) values.push_back(coordinator.schedule(increment, {counter}));
    std::printf("SCHEDULED %d\n", closures);
    std::fflush(stdout);
    coordinator.join();
    std::vector<int> per_worker(static_cast<std::size_t>(strategy.num_workers()), 0);
    int ok = 0;
    for (const cd::Tensor& worker : coordinator.fetch(values)) {
      ++per_worker[static_cast<std::size_t>(worker.values<std::int64_t>()[0])];
      ++ok;
    }
    std::string workers;
    for (int count : per_worker) workers += (workers.empty() ? "" : ",") + std::to_string(count);
    std::printf("RESULT ok=%d counter=%lld workers=%s\n", ok,
                static_cast<long long>(counter.value().values<std::int64_t>()[0]), workers.c_str());
    std::fflush(stdout);
  } catch (const cd::UnavailableError& error) {
    std::printf("ERROR class=UnavailableError what=%s\n", error.what());
  } catch (const collective::Error& error) {
    std::printf("ERROR class=Error what=%s\n", error.what());
  }
  std::fflush(stdout);
  return 0;
}
