// copy_paths_probe: a benchmark (never run as a test) of the ways one
// process on this node can get bytes another process holds, behind the
// choice of shared_memory's handoff ways (docs/performance_history.md, "Handing
// slots over"). Two processes, pinned to processors 0 and 1, each with an
// n-byte buffer, both working at once; medians of 7 repetitions.
//
//   copy_paths_probe [MiB, default 32]
//
//   memcpy, local           each copies its own buffer (the copy bound)
//   streaming copy, local   the same with non-temporal stores
//   CMA read of half        process_vm_readv of half the peer's buffer
//                           (what a single-copy reduce-scatter would do)
//   via cache               writes half into a shared slot with plain
//                           stores, the peer reads it
//   via memory              the same with non-temporal stores
#include <immintrin.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace {

struct Shared {
  std::atomic<int> arrived[2];
  pid_t pid[2];
  char* buffer[2];
};

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

void barrier(Shared* shared, int me, int& generation) {
  ++generation;
  shared->arrived[me].store(generation);
  while (shared->arrived[1 - me].load() < generation) sched_yield();
}

void streaming_copy(char* destination, const char* source, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(source + i));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(destination + i), v);
  }
  _mm_sfence();
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t bytes = (argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 32) << 20;
  auto* shared = static_cast<Shared*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  auto* slots = static_cast<char*>(
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  new (shared) Shared{};
  const pid_t child = fork();
  const int me = child == 0 ? 1 : 0;
  pin(me);
  char* input = static_cast<char*>(std::aligned_alloc(4096, bytes));
  char* output = static_cast<char*>(std::aligned_alloc(4096, bytes));
  std::memset(input, me + 1, bytes);
  std::memset(output, 0, bytes);
  shared->pid[me] = getpid();
  shared->buffer[me] = input;
  int generation = 0;
  barrier(shared, me, generation);
  const std::size_t half = bytes / 2;
  char* my_slot = slots + me * half;
  char* peer_slot = slots + (1 - me) * half;

  auto measure = [&](const char* name, auto&& work) {
    std::vector<double> times;
    for (int rep = 0; rep < 7; ++rep) {
      barrier(shared, me, generation);
      const auto start = std::chrono::steady_clock::now();
      work();
      barrier(shared, me, generation);
      times.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(times.begin(), times.end());
    if (me == 0) std::printf("%-24s %10.0f us\n", name, times[3]);
  };
  if (me == 0) std::printf("# copy_paths_probe: %zu MiB per process, 2 processes\n", bytes >> 20);
  measure("memcpy, local", [&] { std::memcpy(output, input, bytes); });
  measure("streaming copy, local", [&] { streaming_copy(output, input, bytes); });
  measure("CMA read of half", [&] {
    iovec local{output, half};
    iovec remote{shared->buffer[1 - me] + me * half, half};
    if (process_vm_readv(shared->pid[1 - me], &local, 1, &remote, 1, 0) !=
        static_cast<ssize_t>(half)) {
      std::perror("process_vm_readv");
    }
  });
  measure("half via cache", [&] {
    std::memcpy(my_slot, input, half);
    barrier(shared, me, generation);
    std::memcpy(output, peer_slot, half);
  });
  measure("half via memory", [&] {
    streaming_copy(my_slot, input, half);
    barrier(shared, me, generation);
    std::memcpy(output, peer_slot, half);
  });
  if (child != 0) waitpid(child, nullptr, 0);
  return 0;
}
