#include "memory_budget.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>

#include "byte_size.h"
#include "shared_cases.h"
#include "driver.h"
#include "results.h"

namespace collective::bench {
namespace {

constexpr std::size_t kFusionCopies = 5;
constexpr std::size_t kFusionBytesPerTensor = 512;

std::optional<std::size_t> add(std::optional<std::size_t> a, std::optional<std::size_t> b) {
  if (!a || !b || *a > std::numeric_limits<std::size_t>::max() - *b) return std::nullopt;
  return *a + *b;
}

std::optional<std::size_t> multiply(std::optional<std::size_t> a, std::size_t b) {
  if (!a || (b != 0 && *a > std::numeric_limits<std::size_t>::max() / b)) return std::nullopt;
  return *a * b;
}

bool larger(const std::optional<std::size_t>& a, const std::optional<std::size_t>& b) {
  if (!a) return b.has_value();  // overflow is the largest
  return b && *a > *b;
}

// "12.3 GiB" above 1 GiB, else exact ("64 MiB", "1000 B").
std::string approximate(std::size_t bytes) {
  if (bytes < (std::size_t{1} << 30)) return format_byte_size(bytes);
  char text[64];
  std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

std::string describe(const std::optional<std::size_t>& bytes) {
  return bytes ? approximate(*bytes) : std::string("more than 2^64 B");
}

// Physical memory, or the cgroup (v2) limit when it is lower.
std::size_t node_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  std::size_t bytes = pages > 0 && page > 0
                          ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page)
                          : std::numeric_limits<std::size_t>::max();
  std::ifstream limit("/sys/fs/cgroup/memory.max");
  unsigned long long cgroup = 0;
  if (limit >> cgroup && cgroup > 0 && cgroup < bytes) bytes = static_cast<std::size_t>(cgroup);
  return bytes;
}

// The rows of the report and the plan's steps: one per size, collective,
// type, op and algorithm (an upper bound: sizes that round to the same
// count are run once).
MemoryNeed bookkeeping(const BenchOptions& options, std::size_t sizes) {
  if (options.fusion_tensors > 0) {
    const std::optional<std::size_t> rows = multiply(multiply(sizes, options.datatypes.size()),
                                                     std::max<std::size_t>(options.ops.size(), 1));
    return {multiply(rows, kBytesPerFusionRow), std::to_string(sizes) + " sizes' report rows"};
  }
  const std::size_t algorithms =
      options.all_algorithms ? static_cast<std::size_t>(kNumAlgorithms) + options.algorithms.size()
                             : options.algorithms.size();
  const std::optional<std::size_t> rows = multiply(
      multiply(multiply(multiply(sizes, options.collectives.size()), options.datatypes.size()),
               std::max<std::size_t>(options.ops.size(), 1)),
      std::max<std::size_t>(algorithms, 1));
  std::string what = "the plan and report rows of " + std::to_string(sizes) + " sizes";
  if (options.step_factor <= 1) {
    what += " (-b " + std::to_string(options.min_bytes) + " to -e " +
            std::to_string(options.max_bytes) + " in steps of -i " +
            std::to_string(options.step_bytes) + ")";
  }
  return {multiply(rows, kBytesPerSweepRow), what};
}

}  // namespace

MemoryNeed buffers_needed_per_rank(const BenchOptions& options, int ranks, std::size_t largest) {
  MemoryNeed need{std::size_t{0}, "nothing"};
  // Two vectors of per-iteration times (ours and the baseline's, or the
  // fused and one-by-one sides).
  const std::optional<std::size_t> timings =
      multiply(static_cast<std::size_t>(options.iters), 2 * sizeof(double));
  for (DataType type : options.datatypes) {
    const std::size_t element = element_size(type);
    if (options.fusion_tensors > 0) {
      const std::size_t tensor = largest / element * element;
      const std::optional<std::size_t> per_tensor =
          add(multiply(tensor, kFusionCopies), kFusionBytesPerTensor);
      const std::optional<std::size_t> bytes =
          add(multiply(per_tensor, options.fusion_tensors), timings);
      if (larger(bytes, need.bytes)) {
        need = {bytes, "--fusion " + std::to_string(options.fusion_tensors) + " tensors of " +
                           format_byte_size(tensor) + " of " + std::string(to_string(type))};
      }
      continue;
    }
    // --nonblocking gives MPI a receive buffer of its own (overlap.h).
    const std::size_t recv_buffers = options.nonblocking ? 2 : 1;
    for (CollectiveKind kind : options.collectives) {
      if (kind == CollectiveKind::kBarrier) continue;  // --nonblocking's: no buffers
      // The rank with the most: rank 0 (--uneven), the root, or another.
      for (const int rank : {0, options.root, ranks - 1}) {
        const cases::Shape shape{ranks, rank, options.uneven};
        const Geometry geometry =
            make_collective_case(kind)->geometry_for_bytes(largest, element, shape);
        const std::optional<std::size_t> bytes =
            add(add(multiply(geometry.send_elements, element),
                    multiply(multiply(geometry.recv_elements, element), recv_buffers)),
                timings);
        if (larger(bytes, need.bytes)) {
          need = {bytes, std::string(to_string(kind)) + " of " + format_byte_size(geometry.bytes) +
                             " of " + std::string(to_string(type)) + " (send and receive buffers)"};
        }
      }
    }
  }
  return need;
}

MemoryNeed memory_needed_per_rank(const BenchOptions& options, int ranks) {
  // By arithmetic: materializing the sizes could itself need more memory
  // than the run (-f 1 -i 1 -e 1G is 2^30 sizes).
  const std::size_t count = options.size_count();
  MemoryNeed need{std::size_t{0}, "nothing"};
  if (count == 0) return need;
  const MemoryNeed rows = bookkeeping(options, count);
  need = buffers_needed_per_rank(options, ranks, options.largest_size());
  // Rows matter only when there are many sizes; then they are named too.
  if (!rows.bytes || *rows.bytes >= (std::size_t{64} << 20)) {
    need = {add(need.bytes, rows.bytes), need.what + ", and " + rows.what};
  } else {
    need.bytes = add(need.bytes, rows.bytes);
  }
  return need;
}

std::size_t memory_budget_per_rank(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local_ranks = 1;
  MPI_Comm_size(node, &local_ranks);
  MPI_Comm_free(&node);
  unsigned long long budget = node_memory_bytes() / static_cast<std::size_t>(local_ranks);
  MPI_Allreduce(MPI_IN_PLACE, &budget, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm);
  return static_cast<std::size_t>(budget);
}

void refuse_runs_that_cannot_fit(const BenchOptions& options, MPI_Comm comm) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  const MemoryNeed need = memory_needed_per_rank(options, ranks);
  const std::size_t budget = memory_budget_per_rank(comm);
  if (need.bytes && *need.bytes <= budget) return;
  throw BenchError(need.what + " needs " + describe(need.bytes) +
                   " per rank, more than a rank's share of its node's memory (" +
                   approximate(budget) +
                   ": physical memory, or the cgroup limit, over the ranks on the node); lower "
                   "-e/--maxbytes, -n/--iters or --fusion, or raise -i/--stepbytes");
}

}  // namespace collective::bench
