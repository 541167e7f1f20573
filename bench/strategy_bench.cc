// collective_strategy_bench: what the strategies layer adds to an
// all-reduce, measured against the call a user would make instead, in the
// same run.
//
//   mpirun -n 2 --bind-to core collective_strategy_bench [--sizes 1M,64M] [--iters N]
//                                                        [--warmup W] [--local-replicas K]
//
// For each size S (float32), alternating iteration by iteration:
//   layer         MultiWorkerMirroredStrategy (K local replicas per rank, 1 by
//                 default), strategy.run of a function that returns
//                 get_replica_context()->all_reduce(SUM, t), t a tensor of S
//                 bytes per replica; timed from the call to run() until its
//                 per-replica result is destroyed (what one step costs);
//   communicator  Communicator::all_reduce of the same tensor's bytes into
//                 the very block the layer's result just gave back (a tensor
//                 made, zero-filled, before the timer starts): the plain
//                 library call on the same buffers (with K > 1 the
//                 in-process sum of the K tensors is not part of it);
//   run alone     strategy.run of a function that does nothing (run's own
//                 cost).
// With --batch N, a second table: inside one strategy.run, N tensors of S
// bytes in one ReplicaContext::all_reduce(SUM, tensors) (packed as the
// strategy's cross-device ops decide) against N single all_reduce calls,
// alternating; the speed-up is singles / batched per iteration, its median.
// Before each timed call the ranks meet in a barrier; an iteration's time is
// the slowest rank's. Prints medians, their ratio layer / communicator, and
// the median of the iterations' own ratios (robust to the machine changing
// speed during the run).
// Every element of a layer result and a communicator result is checked after
// the timing; a wrong one makes the exit status 1.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "byte_size.h"
#include "collective/collective.h"
#include "collective/distribute/distribute.h"

namespace cd = collective::distribute;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kUsage =
    "usage: collective_strategy_bench [--sizes S1,S2,...] [--iters N] [--warmup W]\n"
    "                                 [--local-replicas K] [--batch N] [--bytes-per-pack B]\n"
    "  sizes in bytes per tensor, with K/M/G suffixes (default 1M,64M)\n"
    "  iterations per size: N, default 256 MiB / size within [20, 200] (--batch: / N)\n"
    "  --batch N: then N tensors of each size in one ReplicaContext::all_reduce\n"
    "  against N single calls; --bytes-per-pack: CommunicationOptions::bytes_per_pack\n";

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr, "collective_strategy_bench: %s\n%s", problem.c_str(), kUsage);
  std::exit(2);
}

struct Arguments {
  std::vector<std::size_t> sizes{std::size_t{1} << 20, std::size_t{64} << 20};
  int iters = 0;  // 0: by size
  int warmup = 3;
  int local_replicas = 1;
  int batch = 0;  // > 0: also N tensors batched against N single calls
  std::size_t bytes_per_pack = 0;
};

int positive(const std::string& flag, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 1 || value > 100000)
    usage(flag + " needs a positive integer");
  return static_cast<int>(value);
}

Arguments parse(int argc, char** argv) {
  Arguments args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) usage(flag + " needs a value");
    const char* value = argv[++i];
    if (flag == "--sizes") {
      args.sizes.clear();
      std::string list = value;
      std::size_t start = 0;
      while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        const auto bytes = collective::bench::parse_byte_size(list.substr(start, comma - start));
        if (!bytes || *bytes % sizeof(float) != 0) usage("bad size in --sizes " + list);
        args.sizes.push_back(*bytes);
        start = comma + 1;
      }
    } else if (flag == "--iters") {
      args.iters = positive(flag, value);
    } else if (flag == "--warmup") {
      args.warmup = positive(flag, value);
    } else if (flag == "--local-replicas") {
      args.local_replicas = positive(flag, value);
    } else if (flag == "--batch") {
      args.batch = positive(flag, value);
    } else if (flag == "--bytes-per-pack") {
      const auto bytes = collective::bench::parse_byte_size(value);
      if (!bytes) usage(std::string("bad --bytes-per-pack ") + value);
      args.bytes_per_pack = *bytes;
    } else {
      usage("unknown flag " + flag);
    }
  }
  return args;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Element i of rank r's (local replica l's) tensor: small integers, so every
// sum is exact in float32.
float pattern(std::size_t i, int replica_in_sync) {
  return static_cast<float>(i % 251 + static_cast<std::size_t>(replica_in_sync));
}

// Wrong elements of a sum over `replicas` tensors of the pattern.
std::int64_t wrong_elements(const float* values, std::size_t count, int replicas) {
  std::int64_t wrong = 0;
  const double offsets = replicas * (replicas - 1) / 2.0;
  for (std::size_t i = 0; i < count; ++i) {
    const double expected = static_cast<double>(i % 251) * replicas + offsets;
    if (values[i] != expected) ++wrong;
  }
  return wrong;
}

// The slowest rank's time of each iteration.
std::vector<double> slowest(collective::Communicator& world, std::vector<double> seconds) {
  collective::AllReduceOptions options;
  options.op = collective::ReduceOp::kMax;
  world.all_reduce(seconds.data(), seconds.data(), seconds.size(), collective::DataType::kFloat64,
                   options);
  return seconds;
}

template <typename Fn>
double timed(collective::Communicator& world, Fn&& fn) {
  world.barrier();
  const auto start = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int default_iterations(std::size_t bytes_per_iteration) {
  return static_cast<int>(
      std::clamp<std::size_t>((std::size_t{256} << 20) / bytes_per_iteration, 20, 200));
}

// Tensor k of replica g: the pattern shifted by k * count, so a result
// unpacked into the wrong place is caught.
std::vector<cd::Tensor> batch_inputs(std::size_t count, int tensors, int replica) {
  std::vector<cd::Tensor> result;
  for (int k = 0; k < tensors; ++k) {
    std::vector<float> values(count);
    for (std::size_t i = 0; i < count; ++i)
      values[i] = pattern(i + static_cast<std::size_t>(k) * count, replica);
    result.emplace_back(std::move(values), cd::Shape{static_cast<std::int64_t>(count)});
  }
  return result;
}

std::int64_t measure_batch(collective::Communicator& world, cd::Strategy& strategy,
                           const Arguments& args, std::size_t bytes) {
  const std::size_t count = bytes / sizeof(float);
  const int n = args.batch;
  const int replicas = strategy.num_replicas_in_sync();
  std::vector<std::vector<cd::Tensor>> per_replica;
  for (int l = 0; l < args.local_replicas; ++l) {
    per_replica.push_back(batch_inputs(count, n, world.rank() * args.local_replicas + l));
  }
  const cd::PerReplica<std::vector<cd::Tensor>> inputs(per_replica);
  const auto batched_step = [&] {
    return strategy.run(
        [](const std::vector<cd::Tensor>& tensors) {
          return cd::get_replica_context()->all_reduce(collective::ReduceOp::kSum, tensors);
        },
        inputs);
  };
  const auto single_steps = [&] {
    return strategy.run(
        [](const std::vector<cd::Tensor>& tensors) {
          std::vector<cd::Tensor> results;
          for (const cd::Tensor& tensor : tensors) {
            results.push_back(
                cd::get_replica_context()->all_reduce(collective::ReduceOp::kSum, tensor));
          }
          return results;
        },
        inputs);
  };
  const int iters =
      args.iters > 0 ? args.iters : default_iterations(bytes * static_cast<std::size_t>(n));
  std::vector<double> batched, singles;
  std::uint64_t packs = 0;
  for (int iteration = 0; iteration < args.warmup + iters; ++iteration) {
    const std::uint64_t packs_before = strategy.extended().cross_device_ops().packs_reduced();
    const double batched_s = timed(world, [&] { batched_step(); });
    packs = strategy.extended().cross_device_ops().packs_reduced() - packs_before;
    const double singles_s = timed(world, [&] { single_steps(); });
    if (iteration >= args.warmup) {
      batched.push_back(batched_s);
      singles.push_back(singles_s);
    }
  }
  const std::vector<double> batched_slowest = slowest(world, batched);
  const std::vector<double> singles_slowest = slowest(world, singles);
  std::vector<double> speedups;
  for (std::size_t i = 0; i < batched_slowest.size(); ++i) {
    speedups.push_back(singles_slowest[i] / batched_slowest[i]);
  }
  // Every element of every result, both ways.
  std::int64_t wrong = 0;
  for (const auto& result : {batched_step(), single_steps()}) {
    for (const std::vector<cd::Tensor>& tensors : result.values()) {
      for (int k = 0; k < n; ++k) {
        const float* values = tensors[static_cast<std::size_t>(k)].values<float>().data();
        const double offsets = replicas * (replicas - 1) / 2.0;
        for (std::size_t i = 0; i < count; ++i) {
          const double expected =
              static_cast<double>((i + static_cast<std::size_t>(k) * count) % 251) * replicas +
              offsets;
          if (values[i] != expected) ++wrong;
        }
      }
    }
  }
  if (world.rank() == 0) {
    std::printf("| %s | %d | %d | %.1f | %.1f | %llu | %.2f |\n",
                collective::bench::format_byte_size(bytes).c_str(), n, iters,
                median(singles_slowest) * 1e6, median(batched_slowest) * 1e6,
                static_cast<unsigned long long>(packs), median(speedups));
    std::fflush(stdout);
  }
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  const Arguments args = parse(argc, argv);
  collective::Environment environment(argc, argv);
  auto world = collective::Communicator::world();
  const bool chief = world.rank() == 0;
  cd::CommunicationOptions communication;
  communication.bytes_per_pack = args.bytes_per_pack;
  cd::MultiWorkerMirroredStrategy strategy(communication,
                                           cd::MirroredStrategy::cpu_devices(args.local_replicas));
  const int replicas = strategy.num_replicas_in_sync();
  if (chief) {
    std::printf(
        "# collective_strategy_bench: %d ranks x %d local replicas, float32 sum, "
        "alternating, medians of the slowest rank (+%d warm-up iterations), bytes_per_pack %zu\n",
        world.size(), args.local_replicas, args.warmup, args.bytes_per_pack);
    std::printf(
        "| size | iterations | Communicator::all_reduce (us) | strategy.run + "
        "ReplicaContext::all_reduce (us) | ratio of medians | median of per-iteration ratios | "
        "run() alone (us) |\n"
        "|---:|---:|---:|---:|---:|---:|---:|\n");
  }
  std::int64_t wrong = 0;
  for (const std::size_t bytes : args.sizes) {
    const std::size_t count = bytes / sizeof(float);
    std::vector<cd::Tensor> inputs;
    for (int l = 0; l < args.local_replicas; ++l) {
      std::vector<float> values(count);
      const int replica = world.rank() * args.local_replicas + l;
      for (std::size_t i = 0; i < count; ++i) values[i] = pattern(i, replica);
      inputs.emplace_back(std::move(values), cd::Shape{static_cast<std::int64_t>(count)});
    }
    const cd::PerReplica<cd::Tensor> t(inputs);
    const int iters = args.iters > 0 ? args.iters : default_iterations(bytes);
    collective::AllReduceOptions options;  // SUM, AUTO: what MWMS's default asks for
    options.memory = collective::MemoryKind::kHost;

    std::vector<double> layer, plain, run_alone;
    for (int iteration = 0; iteration < args.warmup + iters; ++iteration) {
      const double layer_s = timed(world, [&] {
        const cd::PerReplica<cd::Tensor> result = strategy.run(
            [](const cd::Tensor& tensor) {
              return cd::get_replica_context()->all_reduce(collective::ReduceOp::kSum, tensor);
            },
            t);
        if (result[0].num_elements() != count) std::abort();
      });
      // The block the layer's result just gave back: the same output buffer.
      std::optional<cd::Tensor> same_output;
      same_output.emplace(collective::DataType::kFloat32,
                          cd::Shape{static_cast<std::int64_t>(count)});
      const double plain_s = timed(world, [&] {
        world.all_reduce(t[0].raw_data(), same_output->raw_data(), count,
                         collective::DataType::kFloat32, options);
      });
      same_output.reset();
      const double run_s = timed(world, [&] { strategy.run([](const cd::Tensor&) {}, t); });
      if (iteration >= args.warmup) {
        layer.push_back(layer_s);
        plain.push_back(plain_s);
        run_alone.push_back(run_s);
      }
    }
    const std::vector<double> layer_slowest = slowest(world, layer);
    const std::vector<double> plain_slowest = slowest(world, plain);
    const double layer_us = median(layer_slowest) * 1e6;
    const double plain_us = median(plain_slowest) * 1e6;
    const double run_us = median(slowest(world, run_alone)) * 1e6;
    // The machine's speed can change within a run; the ratio of the two
    // calls of one iteration, made back to back, is what it cannot move.
    std::vector<double> paired;
    for (std::size_t i = 0; i < layer_slowest.size(); ++i)
      paired.push_back(layer_slowest[i] / plain_slowest[i]);
    const double paired_ratio = median(paired);

    // Checked outside the timing: one layer result on every local replica,
    // and the communicator's (a sum over ranks of local replica 0's tensor).
    const cd::PerReplica<cd::Tensor> result = strategy.run(
        [](const cd::Tensor& tensor) {
          return cd::get_replica_context()->all_reduce(collective::ReduceOp::kSum, tensor);
        },
        t);
    for (const cd::Tensor& value : result.values()) {
      wrong += wrong_elements(value.values<float>().data(), count, replicas);
    }
    cd::Tensor output(collective::DataType::kFloat32, cd::Shape{static_cast<std::int64_t>(count)});
    world.all_reduce(t[0].raw_data(), output.raw_data(), count, collective::DataType::kFloat32,
                     options);
    if (args.local_replicas == 1)
      wrong += wrong_elements(output.values<float>().data(), count, world.size());
    if (chief) {
      std::printf("| %s | %d | %.1f | %.1f | %.2f | %.2f | %.1f |\n",
                  collective::bench::format_byte_size(bytes).c_str(), iters, plain_us, layer_us,
                  layer_us / plain_us, paired_ratio, run_us);
      std::fflush(stdout);
    }
  }
  if (args.batch > 0) {
    if (chief) {
      std::printf(
          "\n| tensor size | tensors | iterations | single all_reduce calls (us) | one "
          "all_reduce of all (us) | packs | speed-up of batching (median of per-iteration "
          "ratios) |\n|---:|---:|---:|---:|---:|---:|---:|\n");
    }
    for (const std::size_t bytes : args.sizes) wrong += measure_batch(world, strategy, args, bytes);
  }
  collective::AllReduceOptions sum;
  world.all_reduce(&wrong, &wrong, 1, collective::DataType::kInt64, sum);
  if (chief)
    std::printf("# wrong elements: %llu %s\n", static_cast<unsigned long long>(wrong),
                wrong ? "FAILED" : "OK");
  return wrong ? 1 : 0;
}
