#include "memory_budget.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>

#include "byte_size.h"
#include "collective_case.h"
#include "driver.h"

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

}  // namespace

MemoryNeed memory_needed_per_rank(const BenchOptions& options, int ranks) {
  const std::vector<std::size_t> sizes = options.sizes();
  MemoryNeed need{std::size_t{0}, "nothing"};
  if (sizes.empty()) return need;
  const std::size_t largest = sizes.back();
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
    for (CollectiveKind kind : options.collectives) {
      const Geometry geometry = make_collective_case(kind)->geometry(largest, element, ranks);
      const std::optional<std::size_t> bytes =
          add(add(multiply(geometry.send_elements, element),
                  multiply(geometry.recv_elements, element)),
              timings);
      if (larger(bytes, need.bytes)) {
        need = {bytes, std::string(to_string(kind)) + " of " + format_byte_size(geometry.bytes) +
                           " of " + std::string(to_string(type)) + " (send and receive buffers)"};
      }
    }
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
                   "-e/--maxbytes, -n/--iters or --fusion");
}

}  // namespace collective::bench
