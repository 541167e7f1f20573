// distribute_guide_one_device: the OneDeviceStrategy section of TensorFlow's
// distributed training guide in C++.
//
//   distribute_guide_one_device                  # strategy = OneDeviceStrategy(device="/cpu:0")
//   distribute_guide_one_device --device /cpu:1
//
// OneDeviceStrategy places every variable created in its scope and every
// function given to run() on its one device, and distributes input to it;
// unlike the default strategy it goes through the whole machinery (scope,
// replica context, distributed dataset) with one replica. The guide's
// device is "/gpu:0": this build keeps tensors in host memory, so a GPU
// device is refused with UnsupportedError (try --device /gpu:0).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "collective/distribute/distribute.h"

namespace cd = collective::distribute;

namespace {

constexpr const char* kUsage =
    "usage: distribute_guide_one_device [--device NAME]\n"
    "Creates OneDeviceStrategy(device=NAME) (default /cpu:0), then a variable in\n"
    "its scope, a run() and a distributed dataset, and prints where each is.\n";

int run(const std::string& device) {
  // strategy = tf.distribute.OneDeviceStrategy(device="/cpu:0")
  cd::OneDeviceStrategy strategy(device);
  std::printf("strategy: %s, %d replica in sync\n", std::string(strategy.name()).c_str(),
              strategy.num_replicas_in_sync());
  std::printf("worker device: %s\n", strategy.extended().worker_devices().front().c_str());
  std::printf("parameter device: %s\n", strategy.extended().parameter_devices().front().c_str());

  auto scope = strategy.scope();
  // Variables created in the scope are placed on the device: one copy.
  cd::Variable weight(cd::Tensor(std::vector<float>{2.0f}, cd::Shape{1}), {.name = "weight"});
  std::printf("variable '%s': %zu copy, owned by %s\n", weight.name().c_str(), weight.num_copies(),
              std::string(weight.strategy_name()).c_str());

  // Input is distributed to the device: from_tensors(([1.], [1.])).repeat(4).batch(2).
  const cd::Dataset dataset =
      cd::Dataset::from_tensors({cd::Tensor(std::vector<float>{1.0f}, cd::Shape{1}),
                                 cd::Tensor(std::vector<float>{1.0f}, cd::Shape{1})})
          .repeat(4)
          .batch(2);
  int step = 0;
  for (const cd::PerReplica<cd::Element>& batch :
       strategy.experimental_distribute_dataset(dataset)) {
    // Functions given to run() execute on the device, in its replica context.
    const cd::PerReplica<cd::Tensor> outputs = strategy.run(
        [&](const cd::Element& inputs) {
          const cd::ReplicaContext& context = *cd::get_replica_context();
          std::printf("step %d: run() on %s, replica %d, %lld examples\n", step,
                      context.device().c_str(), context.replica_id_in_sync_group(),
                      static_cast<long long>(inputs[0].dim(0)));
          double sum = 0;
          for (float x : inputs[0].values<float>()) sum += x * weight.value().values<float>()[0];
          return cd::Tensor::scalar(static_cast<float>(sum));
        },
        batch);
    std::printf("step %d: reduce(SUM) = %.1f\n", step,
                strategy.reduce(collective::ReduceOp::kSum, outputs).to_doubles()[0]);
    ++step;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "/cpu:0";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
      continue;
    }
    std::fprintf(stderr, "distribute_guide_one_device: bad argument %s\n%s", argv[i], kUsage);
    return 2;
  }
  try {
    return run(device);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "distribute_guide_one_device: %s\n", error.what());
    return 1;
  }
}
