// bucketed_gradient_overlap: a data-parallel step as PyTorch DDP runs it.
// The "backward pass" computes the gradient bucket by bucket (last layer
// first); as soon as a bucket is ready its all-reduce is started with
// all_reduce_async and the next bucket is computed while it runs; the step
// waits for every bucket at the end, in order. The same loop with blocking
// all_reduce calls runs beside it, alternating step by step, and both
// results are checked exactly on every rank (every element of every bucket
// is an integer, so the sums are exact in float32).
//
//   mpirun -n 2 bucketed_gradient_overlap [--buckets 8] [--bucket-kib 1024]
//                                         [--steps 20] [--compute-rounds 24]
//
// Prints "PASS bucketed overlap" and, on rank 0, the median time per step of
// each loop. A benchmark, not a test of speed: docs/performance.md, "The
// strategies layer".
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collective/communicator.h"
#include "collective/environment.h"
#include "collective/errors.h"
#include "collective/work.h"

namespace {

struct Settings {
  int buckets = 8;
  std::size_t bucket_elements = 1024 * 1024 / sizeof(float);
  int steps = 20;
  int compute_rounds = 24;  // per element: how long the backward pass takes
};

Settings parse(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (value < 1) {
      std::fprintf(stderr, "bucketed_gradient_overlap: %s needs a positive number\n", argv[i]);
      std::exit(2);
    }
    if (flag == "--buckets") {
      settings.buckets = static_cast<int>(value);
    } else if (flag == "--bucket-kib") {
      settings.bucket_elements = static_cast<std::size_t>(value) * 1024 / sizeof(float);
    } else if (flag == "--steps") {
      settings.steps = static_cast<int>(value);
    } else if (flag == "--compute-rounds") {
      settings.compute_rounds = static_cast<int>(value);
    } else {
      std::fprintf(stderr, "bucketed_gradient_overlap: unknown flag %s\n", argv[i]);
      std::exit(2);
    }
  }
  return settings;
}

// Where the mixing's result goes, so that the compiler keeps the work.
volatile std::uint64_t compute_sink = 0;

// The gradient of bucket b on `rank` at `step`: element i is the integer
// (x * 2654435761 mod 1000) + rank % 24, x from (step, b, i), found beside
// `rounds` rounds of mixing per element (the computation whose time the
// all-reduce hides; the values do not depend on it).
void backward(std::vector<float>& bucket_values, int step, int bucket, int rank, int rounds) {
  std::uint64_t mixed_all = 0;
  for (std::size_t i = 0; i < bucket_values.size(); ++i) {
    const std::uint64_t x =
        (static_cast<std::uint64_t>(step) << 40) ^ (static_cast<std::uint64_t>(bucket) << 32) ^ i;
    std::uint64_t mixed = x;
    for (int round = 0; round < rounds; ++round) {
      mixed ^= mixed >> 31;
      mixed *= 0x94D049BB133111EBull;
    }
    mixed_all ^= mixed;
    bucket_values[i] =
        static_cast<float>((x * 2654435761u) % 1000 + static_cast<std::uint64_t>(rank % 24));
  }
  compute_sink = compute_sink ^ mixed_all;
}

// Every element of every bucket is the sum over the ranks.
bool check(const std::vector<std::vector<float>>& buckets, int step, int rank, int size,
           const char* loop) {
  std::uint64_t rank_terms = 0;
  for (int r = 0; r < size; ++r) rank_terms += static_cast<std::uint64_t>(r % 24);
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    for (std::size_t i = 0; i < buckets[b].size(); ++i) {
      const std::uint64_t x =
          (static_cast<std::uint64_t>(step) << 40) ^ (static_cast<std::uint64_t>(b) << 32) ^ i;
      const float expected = static_cast<float>(
          ((x * 2654435761u) % 1000) * static_cast<std::uint64_t>(size) + rank_terms);
      if (buckets[b][i] != expected) {
        std::fprintf(stderr,
                     "FAIL bucketed overlap: rank %d, %s loop, step %d, bucket %zu, index %zu: "
                     "expected %.1f, actual %.1f\n",
                     rank, loop, step, b, i, static_cast<double>(expected),
                     static_cast<double>(buckets[b][i]));
        return false;
      }
    }
  }
  return true;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  collective::Environment environment(argc, argv);
  const Settings settings = parse(argc, argv);
  collective::Communicator world = collective::Communicator::world();
  const int rank = world.rank();
  const int size = world.size();
  std::vector<std::vector<float>> buckets(static_cast<std::size_t>(settings.buckets),
                                          std::vector<float>(settings.bucket_elements));
  std::vector<double> blocking_ms;
  std::vector<double> overlapped_ms;
  bool ok = true;
  try {
    // Step 0 of each loop warms up (pages, connections) and is not timed.
    for (int step = 0; step <= settings.steps && ok; ++step) {
      for (const bool overlapped : {false, true}) {
        world.barrier();
        const auto start = std::chrono::steady_clock::now();
        std::vector<collective::Work> in_flight;
        for (int b = 0; b < settings.buckets; ++b) {
          std::vector<float>& bucket = buckets[static_cast<std::size_t>(b)];
          backward(bucket, step, b, rank, settings.compute_rounds);
          if (overlapped) {
            in_flight.push_back(world.all_reduce_async(bucket.data(), bucket.data(), bucket.size(),
                                                       collective::DataType::kFloat32));
          } else {
            world.all_reduce(bucket.data(), bucket.data(), bucket.size(),
                             collective::DataType::kFloat32);
          }
        }
        for (collective::Work& work : in_flight) work.wait();
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        if (step > 0) (overlapped ? overlapped_ms : blocking_ms).push_back(ms);
        ok = check(buckets, step, rank, size, overlapped ? "overlapped" : "blocking");
      }
    }
  } catch (const collective::Error& error) {
    std::fprintf(stderr, "FAIL bucketed overlap: rank %d: %s\n", rank, error.what());
    ok = false;
  }
  // A failure on any rank fails every rank.
  int failed = ok ? 0 : 1;
  collective::AllReduceOptions max;
  max.op = collective::ReduceOp::kMax;
  world.all_reduce(&failed, &failed, 1, collective::DataType::kInt32, max);
  if (failed != 0) {
    if (rank == 0) std::printf("FAIL bucketed overlap\n");
    return 1;
  }
  if (rank == 0) {
    const double blocking = median(blocking_ms);
    const double overlapped = median(overlapped_ms);
    std::printf(
        "%d ranks, %d buckets of %zu KiB, %d steps: blocking %.2f ms/step, overlapped "
        "%.2f ms/step (%.2fx)\n",
        size, settings.buckets, settings.bucket_elements * sizeof(float) / 1024, settings.steps,
        blocking, overlapped, blocking / overlapped);
    std::printf("PASS bucketed overlap\n");
  }
  return 0;
}
