// Training that checkpoints every --every steps and resumes from the latest
// checkpoint, for restart_driver.py: linear regression whose batch for
// step s depends only on (--seed, s), so a resumed run sees the same data as
// an uninterrupted one. Prints "STEP s" after each step (rank 0),
// "PAUSED" and sleeps at --pause-at (to be killed there), and at the end
// "WEIGHTS <hex floats>".
//
//   mpirun -n 2 restart_train --strategy mwms --steps 40 --every 5 --checkpoint-dir DIR
//   mpirun -n 3 restart_train --strategy ps   --steps 40 --every 5 --checkpoint-dir DIR
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "collective/collective.h"
#include "collective/distribute/distribute.h"

namespace cd = collective::distribute;

namespace {

constexpr int kFeatures = 8;
constexpr int kBatch = 32;
constexpr double kLearningRate = 0.05;

struct Arguments {
  std::string strategy = "mwms";
  int steps = 40;
  int every = 5;
  int pause_at = -1;
  std::uint64_t seed = 3;
  std::string directory;
};

// Rows [begin, end) of step s's batch: x uniform in [-1, 1), y = x . w* + noise.
void batch_rows(std::uint64_t seed, int step, int begin, int end, std::vector<float>& x,
                std::vector<float>& y) {
  std::mt19937_64 random(seed * 1000003ULL + static_cast<std::uint64_t>(step));
  x.clear();
  y.clear();
  for (int row = 0; row < kBatch; ++row) {
    float target = 0;
    std::vector<float> features(kFeatures);
    for (int j = 0; j < kFeatures; ++j) {
      features[static_cast<std::size_t>(j)] =
          static_cast<float>(static_cast<double>(random() >> 11) / 4503599627370496.0) - 0.5f;
      target += features[static_cast<std::size_t>(j)] * static_cast<float>(j + 1) * 0.25f;
    }
    target += static_cast<float>(static_cast<double>(random() >> 11) / 9007199254740992.0) * 0.01f;
    if (row >= begin && row < end) {
      x.insert(x.end(), features.begin(), features.end());
      y.push_back(target);
    }
  }
}

// Gradient of sum over the rows of (x.w - y)^2 / kBatch.
cd::Tensor gradient(const cd::Tensor& weights, const std::vector<float>& x,
                    const std::vector<float>& y) {
  const auto w = weights.values<float>();
  std::vector<float> g(kFeatures, 0.0f);
  for (std::size_t row = 0; row < y.size(); ++row) {
    float prediction = 0;
    for (int j = 0; j < kFeatures; ++j)
      prediction +=
          w[static_cast<std::size_t>(j)] * x[row * kFeatures + static_cast<std::size_t>(j)];
    const float error = 2.0f * (prediction - y[row]) / kBatch;
    for (int j = 0; j < kFeatures; ++j)
      g[static_cast<std::size_t>(j)] += error * x[row * kFeatures + static_cast<std::size_t>(j)];
  }
  return cd::Tensor(g, {kFeatures});
}

void after_step(const Arguments& args, int step, bool printer) {
  if (!printer) return;
  std::printf("STEP %d\n", step);
  if (step == args.pause_at) {
    std::printf("PAUSED\n");
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::seconds(120));  // the driver kills the job here
    std::exit(3);
  }
  std::fflush(stdout);
}

void print_weights(const cd::Tensor& weights) {
  std::printf("WEIGHTS");
  for (float w : weights.values<float>()) std::printf(" %a", static_cast<double>(w));
  std::printf("\n");
  std::fflush(stdout);
}

int train_multi_worker(const Arguments& args) {
  cd::MultiWorkerMirroredStrategy strategy;
  const int workers = strategy.extended().num_workers();
  const int worker = strategy.extended().worker_index();
  auto scope = strategy.scope();
  cd::Variable weights(cd::Tensor(collective::DataType::kFloat32, {kFeatures}),
                       {.name = "weights"});
  cd::SGD optimizer(kLearningRate);
  cd::Checkpoint checkpoint(strategy, {{"weights", weights}}, &optimizer);
  checkpoint.restore(args.directory);
  // The paused step is collective too: every worker waits there.
  for (int step = static_cast<int>(checkpoint.step()) + 1; step <= args.steps; ++step) {
    std::vector<float> x, y;
    batch_rows(args.seed, step, kBatch * worker / workers, kBatch * (worker + 1) / workers, x, y);
    strategy.run([&] { optimizer.apply_gradients({{gradient(weights.value(), x, y), weights}}); });
    if (step % args.every == 0) {
      checkpoint.set_step(step);
      checkpoint.save(args.directory);
    }
    after_step(args, step, worker == 0);
    if (step == args.pause_at) std::this_thread::sleep_for(std::chrono::seconds(120));
  }
  if (worker == 0) print_weights(weights.value());
  return 0;
}

int train_parameter_server(const Arguments& args) {
  auto world = collective::Communicator::world();
  cd::RemoteFunctions functions;
  const std::uint64_t seed = args.seed;
  const auto train_step = functions.add("train_step", [seed](cd::ClosureArguments& closure) {
    cd::Variable weights = closure.variable(0);
    const int step = static_cast<int>(closure.tensor(1).values<std::int64_t>()[0]);
    std::vector<float> x, y;
    batch_rows(seed, step, 0, kBatch, x, y);
    cd::SGD optimizer(kLearningRate);
    optimizer.apply_gradients({{gradient(weights.value(), x, y), weights}});
    return cd::Tensor();
  });
  cd::MPIClusterResolver resolver(world, 1);
  cd::ParameterServerStrategy strategy(resolver, functions);
  if (!strategy.is_coordinator()) return 0;
  auto scope = strategy.scope();
  cd::Variable weights(cd::Tensor(collective::DataType::kFloat32, {kFeatures}),
                       {.name = "weights"});
  cd::Checkpoint checkpoint(strategy, {{"weights", weights}});
  checkpoint.restore(args.directory);
  cd::ClusterCoordinator coordinator(strategy);
  for (int step = static_cast<int>(checkpoint.step()) + 1; step <= args.steps; ++step) {
    coordinator.schedule(train_step, {weights, cd::Tensor::scalar<std::int64_t>(step)});
    if (step % args.every == 0 || step == args.pause_at) {
      coordinator.join();
      if (step % args.every == 0) {
        checkpoint.set_step(step);
        checkpoint.save(args.directory);
      }
    }
    after_step(args, step, true);
  }
  coordinator.join();
  print_weights(weights.value());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  collective::Environment environment(argc, argv);
  Arguments args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--strategy") args.strategy = value;
    else if (flag == "--steps") args.steps = std::atoi(value);
    else if (flag == "--every") args.every = std::atoi(value);
    else if (flag == "--pause-at") args.pause_at = std::atoi(value);
    else if (flag == "--seed") args.seed = std::strtoull(value, nullptr, 10);
    else if (flag == "--checkpoint-dir") args.directory = value;
    else {
      std::fprintf(stderr, "restart_train: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (args.directory.empty() || args.every < 1) {
    std::fprintf(stderr, "restart_train: --checkpoint-dir is required, --every >= 1\n");
    return 2;
  }
  return args.strategy == "ps" ? train_parameter_server(args) : train_multi_worker(args);
}
