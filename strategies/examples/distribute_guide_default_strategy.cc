// distribute_guide_default_strategy: the "Default strategy" section of
// TensorFlow's distributed training guide in C++.
//
//   distribute_guide_default_strategy               # no distribution: the default strategy
//   distribute_guide_default_strategy --replicas 2  # the same code under MirroredStrategy
//
// The default strategy is what get_strategy() returns outside any scope: a
// singleton that implements the Strategy API as a pass-through (run(fn)
// just calls fn), so library code can use the API unconditionally and a
// program can switch between a real strategy and no distribution without
// conditional logic.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "collective/distribute/distribute.h"

namespace cd = collective::distribute;

namespace {

constexpr const char* kUsage =
    "usage: distribute_guide_default_strategy [--replicas K]\n"
    "Runs the guide's default-strategy snippets and prints what each returns;\n"
    "with K > 1 the last snippet's strategy is MirroredStrategy with K replicas.\n";

// "In optimizer or other library code": whatever strategy is current, reduce
// is there to call.
double library_code_reduce() {
  cd::Strategy& strategy = cd::get_strategy();
  return strategy.reduce(collective::ReduceOp::kSum, cd::Tensor::scalar(1.0f)).to_doubles()[0];
}

std::string describe(const cd::Variable& variable) {
  char text[256];
  std::snprintf(text, sizeof(text), "<Variable '%s' shape=%s dtype=%s, numpy=%.1f>",
                variable.name().c_str(), cd::shape_string(variable.shape()).c_str(),
                std::string(collective::to_string(variable.dtype())).c_str(),
                variable.value().to_doubles()[0]);
  return text;
}

int run(int replicas) {
  // default_strategy = tf.distribute.get_strategy()
  cd::Strategy& default_strategy = cd::get_strategy();
  std::printf("default strategy: %s, %d replica in sync, singleton: %s, has_strategy: %s\n",
              std::string(default_strategy.name()).c_str(), default_strategy.num_replicas_in_sync(),
              &cd::get_strategy() == &default_strategy ? "yes" : "no",
              cd::has_strategy() ? "true" : "false");

  // strategy.reduce("SUM", 1., axis=None)
  std::printf("reduce(SUM, 1.) = %.1f\n", library_code_reduce());

  // run(fn) simply calls fn, on this thread, in the default replica context.
  const cd::PerReplica<int> result = default_strategy.run(
      [] { return cd::get_replica_context()->replica_id_in_sync_group() + 42; });
  std::printf("run(fn) = %d\n", result[0]);

  // if tf.config.list_physical_devices('gpu'): strategy = MirroredStrategy()
  // else: strategy = tf.distribute.get_strategy()
  // (this build's replicas are host threads: --replicas stands for the GPUs)
  std::unique_ptr<cd::Strategy> mirrored;
  if (replicas > 1) {
    mirrored = std::make_unique<cd::MirroredStrategy>(cd::MirroredStrategy::cpu_devices(replicas));
  }
  cd::Strategy& strategy = mirrored ? *mirrored : cd::get_strategy();
  std::printf("strategy: %s\n", std::string(strategy.name()).c_str());
  {
    auto scope = strategy.scope();
    // print(tf.Variable(1.))
    const cd::Variable variable(cd::Tensor::scalar(1.0f));
    std::printf("%s\n", describe(variable).c_str());
    std::printf("variable copies: %zu, mirrored: %s\n", variable.num_copies(),
                variable.is_mirrored() ? "yes" : "no");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int replicas = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (std::strcmp(argv[i], "--replicas") == 0 && i + 1 < argc) {
      char* end = nullptr;
      const long value = std::strtol(argv[++i], &end, 10);
      if (*end == '\0' && end != argv[i] && value >= 1 && value <= 64) {
        replicas = static_cast<int>(value);
        continue;
      }
    }
    std::fprintf(stderr, "distribute_guide_default_strategy: bad argument %s\n%s", argv[i], kUsage);
    return 2;
  }
  try {
    return run(replicas);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "distribute_guide_default_strategy: %s\n", error.what());
    return 1;
  }
}
