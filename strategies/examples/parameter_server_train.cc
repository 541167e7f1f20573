// parameter_server_train: TF's parameter-server training tutorial in C++,
// launched by mpirun. Rank 0 is the coordinator, the next --num-ps ranks
// (or COLLECTIVE_NUM_PS) are parameter servers, the rest are workers:
//
//   mpirun -n 4 --oversubscribe parameter_server_train --num-ps 1 [--local-replicas K]
//
// As in the tutorial: a dataset function builds each worker's input
// (create_per_worker_dataset), the model's variables are created in
// strategy.scope() and live on the ps tasks (sharded by a
// MinSizePartitioner), a train step is scheduled again and again with
// coordinator.schedule and awaited with join, and the coordinator evaluates
// the model between epochs. The model is logistic regression (8 features +
// bias) on a synthetic data set made from --seed; gradients are written by
// hand. Every step is asynchronous: a worker reads the current weights from
// the ps tasks, computes its batch's gradient and applies it there, while
// the other workers do the same. With --local-replicas K each worker runs
// the step on K local replicas (threads), each on its slice of the batch;
// their gradients are summed synchronously on the worker and applied on the
// ps once per step, as TF's ParameterServerStrategy does with K GPUs.
//
// At the end the coordinator trains the same model synchronously on its own
// (the same number of steps of the same batch size, one process) and prints
// both losses over the whole data set (--format json: "async_loss",
// "sync_loss").
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <random>
#include <string>

#include "collective/collective.h"
#include "collective/distribute/distribute.h"

namespace cd = collective::distribute;
using collective::DataType;

namespace {

struct Arguments {
  std::optional<int> num_ps;
  int epochs = 4;
  int steps_per_epoch = 40;
  std::int64_t batch = 64;
  double learning_rate = 0.5;
  std::uint64_t seed = 7;
  int local_replicas = 1;
  bool json = false;
};

constexpr int kFeatures = 8;
constexpr std::int64_t kExamples = 4096;

// The data set: features uniform in [-1, 1), label 1 with probability
// sigmoid(x . w* + b*).
cd::Tensor features_and_labels(std::uint64_t seed, bool labels) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(kExamples * kFeatures));
  std::vector<float> y(static_cast<std::size_t>(kExamples));
  for (std::int64_t i = 0; i < kExamples; ++i) {
    float z = 0.3f;
    for (int j = 0; j < kFeatures; ++j) {
      const float v = uniform(random);
      x[static_cast<std::size_t>(i * kFeatures + j)] = v;
      z += v * (j % 2 ? -1.0f : 1.0f) * 0.5f * static_cast<float>(j + 1);
    }
    y[static_cast<std::size_t>(i)] =
        uniform(random) * 0.5f + 0.5f < 1.0f / (1.0f + std::exp(-z)) ? 1.0f : 0.0f;
  }
  return labels ? cd::Tensor(y, {kExamples}) : cd::Tensor(x, {kExamples, kFeatures});
}

cd::Dataset whole_dataset(std::uint64_t seed) {
  return cd::Dataset::from_tensor_slices(
      {features_and_labels(seed, false), features_and_labels(seed, true)});
}

// Logistic loss and its gradient over rows [begin, end) of a batch, summed
// and divided by the batch's rows (a replica's slice then contributes its
// share of the batch mean). Without a range: the mean over the batch.
double loss_and_gradient(const cd::Tensor& kernel, const cd::Tensor& bias, const cd::Element& batch,
                         cd::Tensor* kernel_gradient, cd::Tensor* bias_gradient,
                         std::int64_t begin = 0, std::int64_t end = -1) {
  const auto w = kernel.values<float>();
  const float b = bias.values<float>()[0];
  const auto x = batch[0].values<float>();
  const auto y = batch[1].values<float>();
  const std::int64_t rows = batch[0].dim(0);
  if (end < 0) end = rows;
  std::vector<float> gw(kFeatures, 0.0f);
  float gb = 0.0f;
  double loss = 0;
  for (std::int64_t i = begin; i < end; ++i) {
    float z = b;
    for (int j = 0; j < kFeatures; ++j)
      z += w[static_cast<std::size_t>(j)] * x[static_cast<std::size_t>(i * kFeatures + j)];
    const float p = 1.0f / (1.0f + std::exp(-z));
    const float label = y[static_cast<std::size_t>(i)];
    loss +=
        -(label * std::log(std::max(p, 1e-7f)) + (1 - label) * std::log(std::max(1 - p, 1e-7f)));
    const float g = (p - label) / static_cast<float>(rows);
    for (int j = 0; j < kFeatures; ++j)
      gw[static_cast<std::size_t>(j)] += g * x[static_cast<std::size_t>(i * kFeatures + j)];
    gb += g;
  }
  if (kernel_gradient) *kernel_gradient = cd::Tensor(gw, {kFeatures, 1});
  if (bias_gradient) *bias_gradient = cd::Tensor(std::vector<float>{gb}, {1});
  return loss / static_cast<double>(rows);
}

double evaluate(const cd::Tensor& kernel, const cd::Tensor& bias, std::uint64_t seed) {
  const cd::Element all = {features_and_labels(seed, false), features_and_labels(seed, true)};
  return loss_and_gradient(kernel, bias, all, nullptr, nullptr);
}

constexpr const char* kUsage =
    "usage: mpirun -n N parameter_server_train [--num-ps P] [--epochs E] [--steps-per-epoch S]\n"
    "  [--batch B] [--learning-rate LR] [--seed N] [--local-replicas K] [--format text|json]\n";

// A command line that cannot run: what is wrong and the usage on stderr,
// exit 2 (--help: the usage on stdout, exit 0).
[[noreturn]] void refuse(const std::string& problem) {
  std::fprintf(stderr, "parameter_server_train: %s\n%s", problem.c_str(), kUsage);
  std::exit(2);
}

Arguments parse(int argc, char** argv) {
  Arguments args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) refuse(flag + " needs a value");
      return argv[++i];
    };
    // The whole text must be the number.
    const auto number = [&](auto convert) {
      const std::string text = value();
      try {
        std::size_t used = 0;
        const auto parsed = convert(text, &used);
        if (used == text.size()) return parsed;
      } catch (const std::exception&) {
      }
      refuse(flag + " takes a number, not '" + text + "'");
    };
    const auto as_int = [](const std::string& t, std::size_t* used) { return std::stoi(t, used); };
    if (flag == "--num-ps") args.num_ps = number(as_int);
    else if (flag == "--epochs") args.epochs = number(as_int);
    else if (flag == "--steps-per-epoch") args.steps_per_epoch = number(as_int);
    else if (flag == "--batch")
      args.batch =
          number([](const std::string& t, std::size_t* used) { return std::stoll(t, used); });
    else if (flag == "--learning-rate")
      args.learning_rate =
          number([](const std::string& t, std::size_t* used) { return std::stod(t, used); });
    else if (flag == "--local-replicas") args.local_replicas = number(as_int);
    else if (flag == "--seed")
      args.seed =
          number([](const std::string& t, std::size_t* used) { return std::stoull(t, used); });
    else if (flag == "--format") {
      const std::string format = value();
      if (format != "json" && format != "text")
        refuse("--format is text or json, not '" + format + "'");
      args.json = format == "json";
    } else {
      refuse("unknown flag " + flag);
    }
  }
  if (args.local_replicas < 1) refuse("--local-replicas must be at least 1");
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  // The command line first: --help and a bad flag end the process before
  // MPI starts.
  const Arguments args = parse(argc, argv);
  collective::Environment environment(argc, argv);
  auto world = collective::Communicator::world();

  // Every rank registers the same functions, in the same order, before the
  // strategy exists: they are how the coordinator names work for workers.
  cd::RemoteFunctions functions;
  const std::uint64_t seed = args.seed;
  const std::int64_t batch = args.batch;
  const auto dataset_fn =
      functions.add_dataset("dataset_fn", [seed, batch](const cd::InputContext& context) {
        return whole_dataset(seed)
            .shard(context.num_input_pipelines(), context.input_pipeline_id())
            .repeat()
            .batch(batch, /*drop_remainder=*/true);
      });
  const double learning_rate = args.learning_rate;
  // Runs on a worker: the batch is split across the worker's local
  // replicas; each computes its slice's share of the batch-mean gradient,
  // apply_gradients sums the shares across the local replicas
  // (synchronously, on this worker) and pushes one SGD step to the ps.
  const auto train_step = functions.add("train_step", [learning_rate](cd::ClosureArguments& step) {
    const cd::Element batch_element = *step.iterator(0).get_next();
    cd::Variable kernel = step.variable(1);
    cd::Variable bias = step.variable(2);
    cd::Strategy& strategy = step.strategy();
    const cd::PerReplica<cd::Tensor> losses = strategy.run([&] {
      const cd::ReplicaContext& replica = *cd::get_replica_context();
      const std::int64_t rows = batch_element[0].dim(0);
      const std::int64_t k = replica.strategy().extended().num_local_replicas();
      const std::int64_t r = replica.local_replica_id();
      const std::int64_t begin = rows * r / k, end = rows * (r + 1) / k;
      // The slice's sums divided by the whole batch's rows: the shares add
      // up to the batch mean.
      cd::Tensor kernel_gradient, bias_gradient;
      const double share = loss_and_gradient(kernel.value(), bias.value(), batch_element,
                                             &kernel_gradient, &bias_gradient, begin, end);
      cd::SGD optimizer(learning_rate);
      optimizer.apply_gradients({{kernel_gradient, kernel}, {bias_gradient, bias}});
      return cd::Tensor::scalar(share);
    });
    return strategy.reduce(collective::ReduceOp::kSum, losses);
  });

  // ps and worker ranks serve inside the constructor until the coordinator
  // is done, then return here.
  cd::MPIClusterResolver resolver(world, args.num_ps);
  cd::ParameterServerOptions options;
  options.variable_partitioner = cd::MinSizePartitioner(16, resolver.num_ps());
  options.num_local_replicas = args.local_replicas;
  cd::ParameterServerStrategy strategy(resolver, functions, options);
  if (!strategy.is_coordinator()) return 0;

  // The model: created in the strategy's scope, so it lives on the ps tasks.
  auto scope = strategy.scope();
  cd::Variable kernel(cd::Tensor(DataType::kFloat32, {kFeatures, 1}), {.name = "kernel"});
  cd::Variable bias(cd::Tensor(DataType::kFloat32, {1}), {.name = "bias"});
  cd::ClusterCoordinator coordinator(strategy);
  cd::PerWorkerDataset per_worker_dataset = coordinator.create_per_worker_dataset(dataset_fn);
  const cd::PerWorkerIterator per_worker_iterator = per_worker_dataset.make_iterator();
  const double initial_loss = evaluate(kernel.value(), bias.value(), args.seed);
  if (!args.json) {
    std::printf("%d ps, %d workers x %d local replicas; kernel in %zu shards; initial loss %.6f\n",
                strategy.num_ps(), strategy.num_workers(), args.local_replicas,
                strategy.shards(kernel).size(), initial_loss);
  }
  for (int epoch = 0; epoch < args.epochs; ++epoch) {
    cd::RemoteValue last = coordinator.schedule(train_step, {per_worker_iterator, kernel, bias});
    for (int step = 1; step < args.steps_per_epoch; ++step) {
      last = coordinator.schedule(train_step, {per_worker_iterator, kernel, bias});
    }
    coordinator.join();
    if (!args.json) {
      std::printf("epoch %d: last batch loss %.6f, loss over the data set %.6f\n", epoch,
                  last.fetch().values<double>()[0],
                  evaluate(kernel.value(), bias.value(), args.seed));
    }
  }
  const double async_loss = evaluate(kernel.value(), bias.value(), args.seed);

  // The same training, synchronous, in this process alone.
  cd::Tensor sync_kernel(DataType::kFloat32, {kFeatures, 1});
  cd::Tensor sync_bias(DataType::kFloat32, {1});
  const cd::Dataset sync_dataset = whole_dataset(args.seed).repeat().batch(args.batch, true);
  cd::Dataset::Iterator sync_input = sync_dataset.make_iterator();
  for (int step = 0; step < args.epochs * args.steps_per_epoch; ++step) {
    cd::Tensor gw, gb;
    loss_and_gradient(sync_kernel, sync_bias, *sync_input.get_next(), &gw, &gb);
    for (int j = 0; j < kFeatures; ++j) {
      sync_kernel.values<float>()[static_cast<std::size_t>(j)] -=
          static_cast<float>(args.learning_rate) * gw.values<float>()[static_cast<std::size_t>(j)];
    }
    sync_bias.values<float>()[0] -= static_cast<float>(args.learning_rate) * gb.values<float>()[0];
  }
  const double sync_loss = evaluate(sync_kernel, sync_bias, args.seed);
  if (args.json) {
    std::printf(
        "{\"num_ps\": %d, \"num_workers\": %d, \"local_replicas\": %d, \"steps\": %d, "
        "\"initial_loss\": %.9f, "
        "\"async_loss\": %.9f, \"sync_loss\": %.9f}\n",
        strategy.num_ps(), strategy.num_workers(), args.local_replicas,
        args.epochs * args.steps_per_epoch, initial_loss, async_loss, sync_loss);
  } else {
    std::printf("asynchronous: loss %.6f after %d steps; synchronous in one process: %.6f\n",
                async_loss, args.epochs * args.steps_per_epoch, sync_loss);
  }
  return 0;
}
