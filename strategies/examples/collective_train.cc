// collective_train: logistic regression on a synthetic data set, trained
// with a custom training loop that runs unchanged under every strategy (the
// tf.distribute guide's loop in C++). Gradients are computed by hand.
//
//   collective_train --strategy mirrored --local-replicas 2 --format json
//   mpirun -n 4 collective_train --strategy multi_worker_mirrored --format json
//   mpirun --enable-recovery -n 4 collective_train --strategy multi_worker_mirrored
//       --elastic --fault-at-step 7 --fault-rank 2   (a worker dies; the rest go on)
//
// The data set and the initial weights depend only on --seed, and every
// step consumes one global batch (--global-batch rows, the same rows under
// every strategy), so all strategies compute the same training run; only
// the order of float32 summation differs (see docs/strategies.md).
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collective/distribute/distribute.h"
#include "collective/environment.h"
#include "collective/errors.h"

namespace cd = collective::distribute;

namespace {

struct Arguments {
  std::string strategy = "default";
  int local_replicas = 1;
  int steps = 100;
  std::int64_t global_batch = 64;
  std::uint64_t seed = 1;
  double learning_rate = 0.5;
  int features = 8;
  std::int64_t examples = 4096;
  std::string format = "text";
  std::string output;
  std::string implementation = "auto";
  std::size_t bytes_per_pack = 0;
  bool deterministic = false;
  bool elastic = false;
  bool log_steps = false;  // "STEP n workers w" on stderr after each step (worker 0)
  // Fault injection for --elastic: world rank fault_rank SIGKILLs itself
  // inside step fault_step's replica function, while the others reduce.
  int fault_step = -1;
  int fault_rank = -1;
  // Starting from a saved state: the weights (--save-weights' file) and how
  // many global batches the run before consumed.
  std::string initial_weights;
  std::string save_weights;
  int skip_steps = 0;
};

constexpr const char* kUsage =
    "usage: collective_train [--strategy default|one_device|mirrored|central_storage|\n"
    "  multi_worker_mirrored]\n"
    "  [--local-replicas K] [--steps S] [--global-batch B] [--seed N]\n"
    "  [--learning-rate LR] [--features D] [--examples N]\n"
    "  [--implementation auto|ring|nccl] [--bytes-per-pack BYTES] [--deterministic]\n"
    "  [--elastic] [--fault-at-step S --fault-rank R] [--log-steps]\n"
    "  [--save-weights FILE] [--initial-weights FILE] [--skip-steps K]\n"
    "  (nccl serves device buffers: with this example's host tensors the\n"
    "  strategy refuses it with UnsupportedError)\n"
    "  [--format text|json] [--output FILE]\n";

// --help: the usage on stdout, exit 0; a command line that cannot run:
// what is wrong and the usage on stderr, exit 2.
[[noreturn]] void help() {
  std::fputs(kUsage, stdout);
  std::exit(0);
}

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr, "collective_train: %s\n%s", problem.c_str(), kUsage);
  std::exit(2);
}

long long parse_integer(const std::string& flag, const char* text, long long minimum) {
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < minimum) {
    usage(flag + " needs an integer >= " + std::to_string(minimum) + ", got \"" + text + "\"");
  }
  return value;
}

Arguments parse(int argc, char** argv) {
  Arguments args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") help();
    if (flag == "--deterministic") {
      args.deterministic = true;
      continue;
    }
    if (flag == "--elastic") {
      args.elastic = true;
      continue;
    }
    if (flag == "--log-steps") {
      args.log_steps = true;
      continue;
    }
    if (i + 1 >= argc) usage(flag + " needs a value");
    const char* value = argv[++i];
    if (flag == "--strategy") {
      args.strategy = value;
    } else if (flag == "--local-replicas") {
      args.local_replicas = static_cast<int>(parse_integer(flag, value, 1));
    } else if (flag == "--steps") {
      args.steps = static_cast<int>(parse_integer(flag, value, 0));
    } else if (flag == "--global-batch") {
      args.global_batch = parse_integer(flag, value, 1);
    } else if (flag == "--seed") {
      args.seed = static_cast<std::uint64_t>(parse_integer(flag, value, 0));
    } else if (flag == "--learning-rate") {
      char* end = nullptr;
      args.learning_rate = std::strtod(value, &end);
      if (end == value || *end != '\0' || !(args.learning_rate > 0)) {
        usage("--learning-rate needs a positive number");
      }
    } else if (flag == "--features") {
      args.features = static_cast<int>(parse_integer(flag, value, 1));
    } else if (flag == "--examples") {
      args.examples = parse_integer(flag, value, 1);
    } else if (flag == "--format") {
      args.format = value;
      if (args.format != "text" && args.format != "json") usage("--format is text or json");
    } else if (flag == "--output") {
      args.output = value;
    } else if (flag == "--implementation") {
      args.implementation = value;
    } else if (flag == "--bytes-per-pack") {
      args.bytes_per_pack = static_cast<std::size_t>(parse_integer(flag, value, 0));
    } else if (flag == "--fault-at-step") {
      args.fault_step = static_cast<int>(parse_integer(flag, value, 0));
    } else if (flag == "--fault-rank") {
      args.fault_rank = static_cast<int>(parse_integer(flag, value, 0));
    } else if (flag == "--initial-weights") {
      args.initial_weights = value;
    } else if (flag == "--save-weights") {
      args.save_weights = value;
    } else if (flag == "--skip-steps") {
      args.skip_steps = static_cast<int>(parse_integer(flag, value, 0));
    } else {
      usage("unknown flag " + flag);
    }
  }
  const std::string& s = args.strategy;
  if (s != "default" && s != "one_device" && s != "mirrored" && s != "central_storage" &&
      s != "multi_worker_mirrored") {
    usage("unknown strategy \"" + s + "\"");
  }
  if ((args.elastic || args.deterministic) && s != "multi_worker_mirrored") {
    usage("--elastic and --deterministic apply to multi_worker_mirrored only");
  }
  if ((args.fault_step >= 0) != (args.fault_rank >= 0)) {
    usage("--fault-at-step and --fault-rank go together");
  }
  if ((s == "default" || s == "one_device") && args.local_replicas != 1) {
    usage("--local-replicas applies to mirrored, central_storage and multi_worker_mirrored only");
  }
  return args;
}

// splitmix64: a tiny, portable generator, so the data set is the same on
// every platform and rank.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), a multiple of 2^-24 (exact in float32).
  float unit() { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }

 private:
  std::uint64_t state_;
};

struct DataSet {
  cd::Tensor features;  // [examples, features]
  cd::Tensor labels;    // [examples]
  float max_abs_feature = 0;
  float max_sq_norm = 0;  // of (features, 1): bounds the loss curvature
};

DataSet make_data(const Arguments& args) {
  Random random(args.seed);
  const int d = args.features;
  std::vector<double> truth(static_cast<std::size_t>(d) + 1);
  for (double& w : truth) w = 4.0 * random.unit() - 2.0;
  DataSet data;
  std::vector<float> x(static_cast<std::size_t>(args.examples * d));
  std::vector<float> y(static_cast<std::size_t>(args.examples));
  for (std::int64_t i = 0; i < args.examples; ++i) {
    double z = truth[static_cast<std::size_t>(d)];
    float sq_norm = 1;
    for (int j = 0; j < d; ++j) {
      const float v = 2.0f * random.unit() - 1.0f;
      x[static_cast<std::size_t>(i * d + j)] = v;
      z += truth[static_cast<std::size_t>(j)] * v;
      data.max_abs_feature = std::max(data.max_abs_feature, std::fabs(v));
      sq_norm += v * v;
    }
    data.max_sq_norm = std::max(data.max_sq_norm, sq_norm);
    const double p = 1.0 / (1.0 + std::exp(-z));
    y[static_cast<std::size_t>(i)] = random.unit() < p ? 1.0f : 0.0f;
  }
  data.features = cd::Tensor(std::move(x), cd::Shape{args.examples, d});
  data.labels = cd::Tensor(std::move(y), cd::Shape{args.examples});
  return data;
}

// log(1 + e^z) - y z, computed without overflow.
double example_loss(float z, float y) {
  const double zd = z;
  return std::max(zd, 0.0) - zd * y + std::log1p(std::exp(-std::fabs(zd)));
}

float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

struct Model {
  cd::Variable kernel;
  cd::Variable bias;
};

// One replica's training step on its slice of the global batch: the loss is
// sum(per-example loss) / global_batch, so summing gradients over replicas
// gives the global batch's mean gradient (tf.nn.compute_average_loss).
cd::Tensor train_step(const cd::Element& batch, Model& model, cd::SGD& optimizer,
                      std::int64_t global_batch) {
  const cd::Tensor& x = batch[0];
  const cd::Tensor& y = batch[1];
  const std::int64_t rows = x.dim(0);
  const std::int64_t d = x.dim(1);
  const cd::Tensor w_tensor = model.kernel.value();
  const cd::Tensor b_tensor = model.bias.value();
  const auto w = w_tensor.values<float>();
  const float b = b_tensor.values<float>()[0];
  const auto xs = x.values<float>();
  const auto ys = y.values<float>();
  std::vector<float> grad_w(static_cast<std::size_t>(d), 0.0f);
  float grad_b = 0.0f;
  double loss = 0;
  const float scale = 1.0f / static_cast<float>(global_batch);
  for (std::int64_t i = 0; i < rows; ++i) {
    float z = b;
    for (std::int64_t j = 0; j < d; ++j)
      z += w[static_cast<std::size_t>(j)] * xs[static_cast<std::size_t>(i * d + j)];
    const float g = (sigmoid(z) - ys[static_cast<std::size_t>(i)]) * scale;
    for (std::int64_t j = 0; j < d; ++j)
      grad_w[static_cast<std::size_t>(j)] += g * xs[static_cast<std::size_t>(i * d + j)];
    grad_b += g;
    loss += example_loss(z, ys[static_cast<std::size_t>(i)]);
  }
  optimizer.apply_gradients({{cd::Tensor(std::move(grad_w), cd::Shape{d}), model.kernel},
                             {cd::Tensor(std::vector<float>{grad_b}, cd::Shape{1}), model.bias}});
  return cd::Tensor::scalar<double>(loss / static_cast<double>(global_batch));
}

// One replica's summed loss over its slice (for the whole-data-set loss).
cd::Tensor eval_step(const cd::Element& batch, const Model& model) {
  const cd::Tensor& x = batch[0];
  const cd::Tensor& y = batch[1];
  const cd::Tensor w_tensor = model.kernel.value();
  const cd::Tensor b_tensor = model.bias.value();
  const auto w = w_tensor.values<float>();
  const auto xs = x.values<float>();
  const auto ys = y.values<float>();
  const std::int64_t d = x.dim(1);
  double loss = 0;
  for (std::int64_t i = 0; i < x.dim(0); ++i) {
    float z = b_tensor.values<float>()[0];
    for (std::int64_t j = 0; j < d; ++j)
      z += w[static_cast<std::size_t>(j)] * xs[static_cast<std::size_t>(i * d + j)];
    loss += example_loss(z, ys[static_cast<std::size_t>(i)]);
  }
  return cd::Tensor::scalar<double>(loss);
}

double dataset_loss(cd::Strategy& strategy, const cd::DistributedDataset& data, const Model& model,
                    std::int64_t examples) {
  double total = 0;
  for (const cd::PerReplica<cd::Element>& batch : data) {
    const cd::PerReplica<cd::Tensor> sums =
        strategy.run([&model](const cd::Element& slice) { return eval_step(slice, model); }, batch);
    total += strategy.reduce(collective::ReduceOp::kSum, sums).values<double>()[0];
  }
  return total / static_cast<double>(examples);
}

// Whether every copy of the variable on every replica of every worker holds
// the same bits.
bool copies_identical(cd::Strategy& strategy, const cd::Variable& variable) {
  std::vector<cd::Tensor> rows;
  for (const cd::Tensor& copy : strategy.experimental_local_results(variable)) {
    cd::Shape shape{1};
    for (std::int64_t dim : copy.shape()) shape.push_back(dim);
    rows.push_back(copy.reshape(shape));
  }
  // Mirrored variables have one copy per local replica; others one in all.
  while (rows.size() < static_cast<std::size_t>(strategy.extended().num_local_replicas())) {
    rows.push_back(rows.front());
  }
  const cd::Tensor all = strategy.gather(cd::PerReplica<cd::Tensor>(std::move(rows)), 0);
  const std::size_t row_bytes = all.num_bytes() / static_cast<std::size_t>(all.dim(0));
  const auto* bytes = static_cast<const unsigned char*>(all.raw_data());
  for (std::int64_t r = 1; r < all.dim(0); ++r) {
    if (std::memcmp(bytes, bytes + static_cast<std::size_t>(r) * row_bytes, row_bytes) != 0) {
      return false;
    }
  }
  return true;
}

std::unique_ptr<cd::Strategy> make_strategy(const Arguments& args) {
  if (args.strategy == "one_device") return std::make_unique<cd::OneDeviceStrategy>("/cpu:0");
  if (args.strategy == "mirrored") {
    return std::make_unique<cd::MirroredStrategy>(
        cd::MirroredStrategy::cpu_devices(args.local_replicas));
  }
  if (args.strategy == "central_storage") {
    return std::make_unique<cd::CentralStorageStrategy>(
        cd::MirroredStrategy::cpu_devices(args.local_replicas));
  }
  if (args.strategy == "multi_worker_mirrored") {
    cd::CommunicationOptions options;
    if (args.implementation == "auto") {
      options.implementation = cd::CommunicationImplementation::kAuto;
    } else if (args.implementation == "ring") {
      options.implementation = cd::CommunicationImplementation::kRing;
    } else if (args.implementation == "nccl") {
      options.implementation = cd::CommunicationImplementation::kNccl;
    } else {
      usage("--implementation is auto, ring or nccl");
    }
    options.bytes_per_pack = args.bytes_per_pack;
    options.deterministic = args.deterministic;
    options.elastic = args.elastic;
    return std::make_unique<cd::MultiWorkerMirroredStrategy>(
        options, cd::MirroredStrategy::cpu_devices(args.local_replicas));
  }
  return nullptr;  // the default strategy
}

// --save-weights / --initial-weights: one weight per line, exact (%.9g
// round-trips a float32), the bias last.
bool write_weights(const std::string& path, const std::vector<double>& weights) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  bool ok = file != nullptr;
  for (std::size_t i = 0; ok && i < weights.size(); ++i) {
    ok = std::fprintf(file, "%.9g\n", weights[i]) > 0;
  }
  if (file != nullptr && std::fclose(file) != 0) ok = false;
  if (!ok) std::fprintf(stderr, "collective_train: cannot write %s\n", path.c_str());
  return ok;
}

std::vector<float> read_weights(const std::string& path, int count) {
  std::FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) usage("--initial-weights: cannot read " + path);
  std::vector<float> weights;
  float value = 0;
  while (std::fscanf(file, "%f", &value) == 1) weights.push_back(value);
  std::fclose(file);
  if (static_cast<int>(weights.size()) != count) {
    usage("--initial-weights: " + path + " holds " + std::to_string(weights.size()) +
          " weights, this model has " + std::to_string(count) + " (--features + 1)");
  }
  return weights;
}

std::string json_floats(const std::vector<double>& values) {
  std::string text = "[";
  char number[64];
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::snprintf(number, sizeof(number), "%.9g", values[i]);
    text += (i ? ", " : "") + std::string(number);
  }
  return text + "]";
}

int train(const Arguments& args) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<cd::Strategy> owned = make_strategy(args);
  cd::Strategy& strategy = owned ? *owned : cd::get_strategy();
  const DataSet data = make_data(args);

  std::optional<cd::Strategy::Scope> scope;
  scope.emplace(strategy);

  Random init(args.seed ^ 0x5DEECE66Dull);
  std::vector<float> initial_kernel(static_cast<std::size_t>(args.features));
  for (float& w : initial_kernel) w = 0.2f * init.unit() - 0.1f;
  float initial_bias = 0.0f;
  if (!args.initial_weights.empty()) {
    const std::vector<float> saved = read_weights(args.initial_weights, args.features + 1);
    std::copy(saved.begin(), saved.end() - 1, initial_kernel.begin());
    initial_bias = saved.back();
  }
  Model model{
      cd::Variable(cd::Tensor(initial_kernel, cd::Shape{args.features}), {.name = "kernel"}),
      cd::Variable(cd::Tensor(std::vector<float>{initial_bias}, cd::Shape{1}), {.name = "bias"})};
  cd::SGD optimizer(args.learning_rate);

  const cd::Dataset examples = cd::Dataset::from_tensor_slices({data.features, data.labels});
  const cd::DistributedDataset train_data = strategy.experimental_distribute_dataset(
      examples.repeat().batch(args.global_batch, /*drop_remainder=*/true));
  const cd::DistributedDataset eval_data =
      strategy.experimental_distribute_dataset(examples.batch(args.global_batch));

  // The largest weight magnitude along the trajectory: the float32 error
  // bound of check_training_runs.py needs it.
  double max_abs_weight = 0;
  const auto track_weights = [&] {
    for (const cd::Variable* v : {&model.kernel, &model.bias}) {
      for (double w : v->value().to_doubles())
        max_abs_weight = std::max(max_abs_weight, std::fabs(w));
    }
  };
  track_weights();
  const double initial_loss = dataset_loss(strategy, eval_data, model, args.examples);
  cd::DistributedIterator iterator = train_data.make_iterator();
  // The global batches a run before this one consumed (--skip-steps).
  for (int step = 0; step < args.skip_steps; ++step) (void)iterator.get_next();
  double last_step_loss = 0;
  // Elastic training: the steps after which fewer workers went on.
  std::string elastic_events;
  const int first_worker_index = strategy.extended().worker_index();
  for (int step = args.skip_steps; step < args.skip_steps + args.steps; ++step) {
    const int workers = strategy.extended().num_workers();
    const int redone = strategy.extended().elastic_steps_redone();
    const cd::PerReplica<cd::Element> batch = iterator.get_next();
    const cd::PerReplica<cd::Tensor> losses = strategy.run(
        [&](const cd::Element& slice) {
          if (step == args.fault_step && first_worker_index == args.fault_rank) {
            std::raise(SIGKILL);  // --fault-at-step: the others wait in this step's reduction
          }
          return train_step(slice, model, optimizer, args.global_batch);
        },
        batch);
    last_step_loss = strategy.reduce(collective::ReduceOp::kSum, losses).values<double>()[0];
    track_weights();
    if (args.log_steps && strategy.extended().worker_index() == 0) {
      std::fprintf(stderr, "STEP %d workers %d\n", step, strategy.extended().num_workers());
    }
    if (strategy.extended().num_workers() != workers) {
      char event[128];
      // redone: this step ran again on the survivors; else it completed on
      // every worker and the survivors went on from the next.
      std::snprintf(event, sizeof(event),
                    "%s{\"step\": %d, \"workers_before\": %d, \"workers\": %d, \"redone\": %s}",
                    elastic_events.empty() ? "" : ", ", step, workers,
                    strategy.extended().num_workers(),
                    strategy.extended().elastic_steps_redone() != redone ? "true" : "false");
      elastic_events += event;
    }
  }
  const double final_loss = dataset_loss(strategy, eval_data, model, args.examples);
  const bool identical =
      copies_identical(strategy, model.kernel) && copies_identical(strategy, model.bias);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<double> weights = model.kernel.value().to_doubles();
  weights.push_back(model.bias.value().to_doubles()[0]);
  if (!strategy.extended().should_checkpoint()) return identical ? 0 : 1;  // the chief reports
  if (!args.save_weights.empty() && !write_weights(args.save_weights, weights)) return 1;

  std::string report;
  char line[1024];
  if (args.format == "json") {
    std::snprintf(
        line, sizeof(line),
        "{\"strategy\": \"%s\", \"strategy_name\": \"%s\", \"num_replicas_in_sync\": %d, "
        "\"num_workers\": %d, \"local_replicas\": %d, \"steps\": %d, \"global_batch\": %lld, "
        "\"seed\": %llu, \"learning_rate\": %.17g, \"features\": %d, \"examples\": %lld, "
        "\"max_abs_feature\": %.9g, \"max_sq_norm\": %.9g, \"max_abs_weight\": %.9g, "
        "\"initial_loss\": %.17g, "
        "\"final_loss\": %.17g, \"last_step_loss\": %.17g, \"replicas_identical\": %s, "
        "\"seconds\": %.3f, \"first_step\": %d, \"elastic_events\": [%s], ",
        args.strategy.c_str(), std::string(strategy.name()).c_str(),
        strategy.num_replicas_in_sync(), strategy.extended().num_workers(),
        strategy.extended().num_local_replicas(), args.steps,
        static_cast<long long>(args.global_batch), static_cast<unsigned long long>(args.seed),
        args.learning_rate, args.features, static_cast<long long>(args.examples),
        data.max_abs_feature, data.max_sq_norm, max_abs_weight, initial_loss, final_loss,
        last_step_loss, identical ? "true" : "false", seconds, args.skip_steps,
        elastic_events.c_str());
    report = line + std::string("\"weights\": ") + json_floats(weights) + "}\n";
  } else {
    std::snprintf(line, sizeof(line),
                  "%s: %d replicas in sync (%d workers x %d local), %d steps of %lld\n"
                  "loss %.6f -> %.6f, copies identical: %s, %.3f s\n",
                  std::string(strategy.name()).c_str(), strategy.num_replicas_in_sync(),
                  strategy.extended().num_workers(), strategy.extended().num_local_replicas(),
                  args.steps, static_cast<long long>(args.global_batch), initial_loss, final_loss,
                  identical ? "yes" : "NO", seconds);
    report = line + std::string("weights ") + json_floats(weights) + "\n";
  }
  std::fputs(report.c_str(), stdout);
  if (!args.output.empty()) {
    std::FILE* file = std::fopen(args.output.c_str(), "w");
    if (file == nullptr || std::fputs(report.c_str(), file) < 0 || std::fclose(file) != 0) {
      std::fprintf(stderr, "collective_train: cannot write %s\n", args.output.c_str());
      return 1;
    }
  }
  return identical ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Arguments args = parse(argc, argv);
  // MPI only for the multi-worker strategy; the others run in one process.
  std::optional<collective::Environment> environment;
  if (args.strategy == "multi_worker_mirrored") environment.emplace(argc, argv);
  try {
    return train(args);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "collective_train: %s\n", error.what());
    return 1;
  }
}
