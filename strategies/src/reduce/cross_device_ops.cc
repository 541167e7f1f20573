#include "collective/distribute/cross_device_ops.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include <mpi.h>

#include "collective/diagnostics.h"
#include "collective/errors.h"
#include "values/element_math.h"
#include "base/log.h"
#include "values/tensor_access.h"
#include "reduce/worker_calls.h"

namespace collective::distribute {
namespace {

// The packs' cross-worker calls of the batch this thread is reducing
// (reduce_group opens it): started in order, waited for at the group's end.
// Per thread, so batch_reduce on separate threads never mixes its calls.
struct BatchInFlight {
  bool open = false;
  std::vector<detail::WorkerCalls::InFlightCall> calls;
};
thread_local BatchInFlight batch_in_flight;

// Opens the batch; on the way out (also by an exception) every call still
// in flight is waited for before the staging buffers are freed.
class BatchScope {
 public:
  BatchScope() { batch_in_flight.open = true; }
  ~BatchScope() {
    batch_in_flight.open = false;
    if (batch_in_flight.calls.empty()) return;
    for (auto& call : batch_in_flight.calls) {
      try {
        call.work.wait();
      } catch (...) {
        // The failure that unwinds the batch is the one raised.
      }
    }
    batch_in_flight.calls.clear();
  }
  BatchScope(const BatchScope&) = delete;
  BatchScope& operator=(const BatchScope&) = delete;
};

// The progress thread calls MPI beside the program's threads: packs stay in
// flight only under MPI_THREAD_MULTIPLE; below it each pack waits for its
// reduction, as before (logged once).
bool packs_may_stay_in_flight() {
  static const bool allowed = [] {
    int initialized = 0;
    int finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    int level = MPI_THREAD_SINGLE;
    if (initialized && !finalized) MPI_Query_thread(&level);
    if (level != MPI_THREAD_MULTIPLE) {
      DISTRIBUTE_LOG(kInfo,
                     "CollectiveAllReduce: MPI's thread level is below "
                     "MPI_THREAD_MULTIPLE, so batch_reduce waits for each pack's "
                     "reduction before packing the next");
    }
    return level == MPI_THREAD_MULTIPLE;
  }();
  return allowed;
}

}  // namespace

CrossDeviceOps::~CrossDeviceOps() = default;

void CrossDeviceOps::note_packs_in_flight(std::uint64_t count) {
  std::uint64_t most = most_packs_in_flight_.load();
  while (count > most && !most_packs_in_flight_.compare_exchange_weak(most, count)) {
  }
}

Tensor CrossDeviceOps::reduce(ReduceOp op, const PerReplica<Tensor>& per_replica_value) {
  return batch_reduce(op, {per_replica_value}).front();
}

std::vector<Tensor> CrossDeviceOps::batch_reduce(
    ReduceOp op, const std::vector<PerReplica<Tensor>>& per_replica_values) {
  std::vector<std::vector<const Tensor*>> views(per_replica_values.size());
  for (std::size_t v = 0; v < per_replica_values.size(); ++v) {
    for (const Tensor& replica_value : per_replica_values[v].values())
      views[v].push_back(&replica_value);
  }
  return batch_reduce_views(op, views);
}

std::vector<Tensor> CrossDeviceOps::batch_reduce_views(
    ReduceOp op, const std::vector<std::vector<const Tensor*>>& values) {
  const TraceSlice traced(
      "batch_reduce", "strategies",
      TraceSlice::enabled() ? std::string(name()) + ": " + std::to_string(values.size()) + " values"
                            : std::string());
  // Built only for an error: this is every step's path.
  const auto operation = [this] { return std::string(name()) + ".batch_reduce"; };
  if (static_cast<int>(op) < 0 || static_cast<int>(op) >= kNumReduceOps) {
    throw InvalidArgumentError(operation(), -1,
                               "unknown ReduceOp value " + std::to_string(static_cast<int>(op)));
  }
  if (values.empty()) return {};
  const std::size_t replicas = values.front().size();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::vector<const Tensor*>& value = values[i];
    if (value.empty() || value.size() != replicas) {
      throw InvalidArgumentError(
          operation(), -1,
          "value " + std::to_string(i) + " has " + std::to_string(value.size()) +
              " per-replica values; value 0 has " + std::to_string(replicas) +
              " (need the same number, at least one)");
    }
    detail::require_op_applies(op, value[0]->dtype(), operation(), -1);
    for (std::size_t r = 1; r < replicas; ++r) {
      if (value[r]->dtype() != value[0]->dtype() || value[r]->shape() != value[0]->shape()) {
        throw InvalidArgumentError(operation(), -1,
                                   "value " + std::to_string(i) + ": replica " + std::to_string(r) +
                                       " holds " + value[r]->debug_string() + ", replica 0 holds " +
                                       value[0]->debug_string());
      }
    }
  }
  // Values of one dtype share packs; dtypes go in order of first appearance
  // (the same on every worker, given the same calls).
  std::vector<std::pair<DataType, std::vector<std::size_t>>> groups;  // few dtypes: a list
  for (std::size_t i = 0; i < values.size(); ++i) {
    const DataType type = values[i][0]->dtype();
    auto group = std::find_if(groups.begin(), groups.end(),
                              [type](const auto& entry) { return entry.first == type; });
    if (group == groups.end()) group = groups.insert(groups.end(), {type, {}});
    group->second.push_back(i);
  }
  std::vector<Tensor> results(values.size());
  for (const auto& [type, indices] : groups) {
    if (detail::reduces_in_float32(type, op)) {
      // float16/bfloat16 SUM, MEAN, PROD: every step (the replicas, the
      // workers, MEAN's division) on float32 copies, rounded once at the end.
      std::vector<std::vector<Tensor>> wide(indices.size());
      std::vector<std::vector<const Tensor*>> wide_views(indices.size());
      std::vector<std::size_t> wide_indices(indices.size());
      for (std::size_t j = 0; j < indices.size(); ++j) {
        wide_indices[j] = j;
        for (const Tensor* replica_value : values[indices[j]]) {
          wide[j].push_back(detail::widened_to_float32(*replica_value));
        }
        for (const Tensor& replica_value : wide[j]) wide_views[j].push_back(&replica_value);
      }
      std::vector<Tensor> reduced = reduce_group(op, wide_views, wide_indices, element_size(type));
      for (std::size_t j = 0; j < indices.size(); ++j) {
        results[indices[j]] = detail::rounded_from_float32(reduced[j], type);
      }
      continue;
    }
    std::vector<Tensor> reduced = reduce_group(op, values, indices, element_size(type));
    for (std::size_t j = 0; j < indices.size(); ++j) results[indices[j]] = std::move(reduced[j]);
  }
  return results;
}

std::vector<Tensor> CrossDeviceOps::reduce_group(
    ReduceOp op, const std::vector<std::vector<const Tensor*>>& values,
    const std::vector<std::size_t>& indices, std::size_t packing_element_size) {
  const std::size_t replicas = values[indices.front()].size();
  const DataType type = values[indices.front()][0]->dtype();
  const std::size_t element = element_size(type);
  std::vector<std::size_t> sizes;
  std::vector<std::size_t> starts;  // of each tensor in the concatenation, in elements
  std::size_t total = 0;
  for (std::size_t index : indices) {
    starts.push_back(total);
    sizes.push_back(values[index][0]->num_elements());
    total += sizes.back();
  }
  // Every result byte is written by exactly one pack below.
  std::vector<Tensor> results;
  results.reserve(indices.size());
  for (std::size_t index : indices) {
    results.push_back(detail::TensorAccess::uninitialized(type, values[index][0]->shape()));
  }
  const auto replica_bytes = [&](std::size_t j, std::size_t r, std::size_t element_offset) {
    return static_cast<const std::byte*>(values[indices[j]][r]->raw_data()) +
           element_offset * element;
  };
  const auto result_bytes = [&](std::size_t j, std::size_t element_offset) {
    return static_cast<std::byte*>(results[j].raw_data()) + element_offset * element;
  };

  // A pack across tensors is split into the results once its reduction
  // finished; until then its buffers stay here.
  struct PendingUnpack {
    std::vector<detail::TensorStorage> staging;
    detail::TensorStorage packed_output;
    const std::byte* output;
    std::size_t first_element;
    std::size_t end_element;
    std::size_t first_tensor;
    std::size_t last_tensor;
  };
  std::vector<PendingUnpack> unpacks;
  const BatchScope batch;

  std::vector<const void*> inputs(replicas);
  std::size_t first_tensor = 0;  // the first tensor that ends after the current pack's start
  for (const PackRange& pack : plan_packs(sizes, packing_element_size)) {
    if (pack.num_elements == 0) continue;
    const std::size_t pack_end = pack.first_element + pack.num_elements;
    while (starts[first_tensor] + sizes[first_tensor] <= pack.first_element) ++first_tensor;
    std::size_t last_tensor = first_tensor;  // the last tensor the pack touches
    while (last_tensor + 1 < sizes.size() && starts[last_tensor + 1] < pack_end) ++last_tensor;
    const TraceSlice pack_slice(
        "pack", "strategies",
        TraceSlice::enabled() ? std::to_string(pack.num_elements) + " elements" : std::string());

    // A pack inside one tensor, or any pack of an in-process reduction (no
    // cross-worker call to share, so nothing to gain from one buffer), is
    // reduced piece by piece straight from the replicas' buffers into the
    // results.
    if (first_tensor == last_tensor || num_workers() == 1) {
      for (std::size_t j = first_tensor; j <= last_tensor; ++j) {
        const std::size_t from = std::max(pack.first_element, starts[j]);
        const std::size_t to = std::min(pack_end, starts[j] + sizes[j]);
        if (to == from) continue;
        const std::size_t offset = from - starts[j];
        void* output = result_bytes(j, offset);
        if (replicas == 1) {
          reduce_single_replica_pack(op, type, replica_bytes(j, 0, offset), output, to - from);
        } else {
          for (std::size_t r = 0; r < replicas; ++r) inputs[r] = replica_bytes(j, r, offset);
          reduce_pack(op, type, inputs, output, to - from);
        }
      }
    } else {
      // Across tensors: the packing copy into one staging buffer per
      // replica, reduced into the first replica's (one replica: in place)
      // or a separate output, then split into the results.
      const std::size_t pack_bytes = pack.num_elements * element;
      std::vector<detail::TensorStorage> staging;
      staging.reserve(replicas);
      std::optional<TraceSlice> packing;
      packing.emplace("packing", "strategies");
      for (std::size_t r = 0; r < replicas; ++r) {
        staging.emplace_back(pack_bytes);
        for (std::size_t j = first_tensor; j <= last_tensor; ++j) {
          const std::size_t from = std::max(pack.first_element, starts[j]);
          const std::size_t to = std::min(pack_end, starts[j] + sizes[j]);
          if (to == from) continue;  // an empty tensor
          std::memcpy(staging[r].data() + (from - pack.first_element) * element,
                      replica_bytes(j, r, from - starts[j]), (to - from) * element);
        }
        inputs[r] = staging[r].data();
      }
      packing.reset();
      detail::TensorStorage packed_output;
      std::byte* output = staging[0].data();
      if (replicas == 1) {
        reduce_single_replica_pack(op, type, output, output, pack.num_elements);
      } else {
        packed_output = detail::TensorStorage(pack_bytes);
        output = packed_output.data();
        reduce_pack(op, type, inputs, output, pack.num_elements);
      }
      unpacks.push_back(PendingUnpack{std::move(staging), std::move(packed_output), output,
                                      pack.first_element, pack_end, first_tensor, last_tensor});
    }
    packs_reduced_.fetch_add(1);
  }
  // Every pack was started while the next was packed; now each is waited
  // for in order, and the packs across tensors are split into the results.
  finish_packs_in_flight();
  for (const PendingUnpack& unpack : unpacks) {
    const TraceSlice unpacking("unpacking", "strategies");
    for (std::size_t j = unpack.first_tensor; j <= unpack.last_tensor; ++j) {
      const std::size_t from = std::max(unpack.first_element, starts[j]);
      const std::size_t to = std::min(unpack.end_element, starts[j] + sizes[j]);
      if (to == from) continue;
      std::memcpy(result_bytes(j, from - starts[j]),
                  unpack.output + (from - unpack.first_element) * element, (to - from) * element);
    }
  }
  if (op == ReduceOp::kMean) {
    const std::int64_t divisor = static_cast<std::int64_t>(replicas) * num_workers();
    for (Tensor& result : results) {
      detail::divide_in_place(type, result.raw_data(), result.num_elements(), divisor);
    }
  }
  return results;
}

Mirrored<Tensor> CrossDeviceOps::broadcast(const Tensor& value,
                                           std::size_t num_local_replicas) const {
  return Mirrored<Tensor>(std::vector<Tensor>(num_local_replicas, value));
}

void CrossDeviceOps::reduce_pack_across_workers(ReduceOp, DataType, void*, std::size_t) {}

void CrossDeviceOps::reduce_single_replica_pack(ReduceOp op, DataType type, const void* input,
                                                void* output, std::size_t count) {
  if (input != output) std::memcpy(output, input, count * element_size(type));
  reduce_pack_across_workers(op, type, output, count);
}

void CrossDeviceOps::reduce_pack(ReduceOp op, DataType type, std::span<const void* const> inputs,
                                 void* output, std::size_t count) {
  reduce_replica_buffers(op, type, inputs, output, count);
  reduce_pack_across_workers(op, type, output, count);
}

namespace {

// Splits the concatenation of all tensors into num_packs nearly equal packs
// (tensors may straddle packs), as tf.distribute's num_packs does.
std::vector<PackRange> split_evenly(const std::vector<std::size_t>& tensor_sizes, int num_packs) {
  std::size_t total = 0;
  for (std::size_t size : tensor_sizes) total += size;
  std::vector<PackRange> packs;
  const std::size_t n = static_cast<std::size_t>(num_packs);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t first = total * i / n;
    const std::size_t last = total * (i + 1) / n;
    if (last > first) packs.push_back(PackRange{first, last - first});
  }
  return packs;
}

int checked_num_packs(int num_packs, const char* name) {
  if (num_packs < 1) {
    throw InvalidArgumentError(name, -1,
                               "num_packs must be at least 1, got " + std::to_string(num_packs));
  }
  return num_packs;
}

}  // namespace

// ---- ReductionToOneDevice ----------------------------------------------------

void ReductionToOneDevice::reduce_replica_buffers(ReduceOp op, DataType type,
                                                  std::span<const void* const> inputs, void* output,
                                                  std::size_t count) {
  std::vector<int> order(inputs.size());
  for (std::size_t r = 0; r < order.size(); ++r) order[r] = static_cast<int>(r);
  detail::reduce_in_order(op, type, inputs, order, output, count);
}

std::vector<PackRange> ReductionToOneDevice::plan_packs(
    const std::vector<std::size_t>& tensor_sizes, std::size_t) const {
  // No packing: one reduction per tensor.
  std::vector<PackRange> packs;
  std::size_t first = 0;
  for (std::size_t size : tensor_sizes) {
    packs.push_back(PackRange{first, size});
    first += size;
  }
  return packs;
}

// ---- HierarchicalCopyAllReduce -----------------------------------------------

HierarchicalCopyAllReduce::HierarchicalCopyAllReduce(int num_packs)
    : num_packs_(checked_num_packs(num_packs, "HierarchicalCopyAllReduce")) {}

void HierarchicalCopyAllReduce::reduce_replica_buffers(ReduceOp op, DataType type,
                                                       std::span<const void* const> inputs,
                                                       void* output, std::size_t count) {
  detail::reduce_as_tree(op, type, inputs, output, count);
}

std::vector<PackRange> HierarchicalCopyAllReduce::plan_packs(
    const std::vector<std::size_t>& tensor_sizes, std::size_t) const {
  return split_evenly(tensor_sizes, num_packs_);
}

// ---- NcclAllReduce -----------------------------------------------------------

NcclAllReduce::NcclAllReduce(int num_packs)
    : num_packs_(checked_num_packs(num_packs, "NcclAllReduce")) {}

void NcclAllReduce::reduce_replica_buffers(ReduceOp op, DataType type,
                                           std::span<const void* const> inputs, void* output,
                                           std::size_t count) {
  std::call_once(host_fallback_logged_, [] {
    DISTRIBUTE_LOG(kWarn,
                   "NcclAllReduce: the replicas' tensors are in host memory, which NCCL "
                   "does not serve; reducing them in ring order in-process instead");
  });
  detail::reduce_in_ring_order(op, type, inputs, output, count);
}

std::vector<PackRange> NcclAllReduce::plan_packs(const std::vector<std::size_t>& tensor_sizes,
                                                 std::size_t) const {
  return split_evenly(tensor_sizes, num_packs_);
}

// ---- CollectiveAllReduce -----------------------------------------------------

CollectiveAllReduce::CollectiveAllReduce(Communicator communicator, CommunicationOptions options,
                                         std::unique_ptr<CrossDeviceOps> local_ops,
                                         std::shared_ptr<std::mutex> communicator_mutex)
    : communicator_(std::move(communicator)),
      options_(options),
      local_ops_(std::move(local_ops)),
      worker_calls_(
          std::make_shared<detail::WorkerCalls>(communicator_, std::move(communicator_mutex))) {
  // A forced kNccl cannot serve host tensors: raise now, not at the first
  // reduction (and never fall back).
  (void)host_algorithm_for(options_.implementation, "CollectiveAllReduce");
  if (!local_ops_) local_ops_ = std::make_unique<ReductionToOneDevice>();
}

// The workers now: an elastic strategy's shrink to the survivors reaches
// the calls (worker_calls_), not the communicator this was made with.
int CollectiveAllReduce::num_workers() const { return worker_calls_->size(); }

void CollectiveAllReduce::reduce_replica_buffers(ReduceOp op, DataType type,
                                                 std::span<const void* const> inputs, void* output,
                                                 std::size_t count) {
  local_ops_->reduce_replica_buffers(op, type, inputs, output, count);
}

std::vector<PackRange> CollectiveAllReduce::plan_packs(const std::vector<std::size_t>& tensor_sizes,
                                                       std::size_t element_size) const {
  // The default (bytes_per_pack 0) packs only tensors of at most
  // kDefaultLargestPackedTensor bytes, in packs of at most
  // kDefaultBytesPerPack; an explicit bytes_per_pack packs any tensor that
  // fits.
  const bool by_default = options_.bytes_per_pack == 0;
  const std::size_t limit = by_default ? kDefaultBytesPerPack : options_.bytes_per_pack;
  const std::size_t largest_packed = by_default ? kDefaultLargestPackedTensor : limit;
  // Greedy on tensor boundaries: a pack closes when the next tensor would
  // take it past the limit; a tensor too large to pack is a pack of its own,
  // reduced straight from the replicas' buffers (reduce_group).
  std::vector<PackRange> packs;
  std::size_t first = 0;
  PackRange current{0, 0};
  for (std::size_t size : tensor_sizes) {
    const bool alone = size * element_size > largest_packed;
    if (current.num_elements > 0 &&
        (alone || (current.num_elements + size) * element_size > limit)) {
      packs.push_back(current);
      current = PackRange{first, 0};
    }
    current.num_elements += size;
    first += size;
    if (alone) {
      packs.push_back(current);
      current = PackRange{first, 0};
    }
  }
  if (current.num_elements > 0) packs.push_back(current);
  return packs;
}

void CollectiveAllReduce::reduce_pack_across_workers(ReduceOp op, DataType type, void* buffer,
                                                     std::size_t count) {
  all_reduce_across_workers(op, type, buffer, buffer, count);
}

void CollectiveAllReduce::reduce_single_replica_pack(ReduceOp op, DataType type, const void* input,
                                                     void* output, std::size_t count) {
  all_reduce_across_workers(op, type, input, output, count);
}

void CollectiveAllReduce::all_reduce_across_workers(ReduceOp op, DataType type, const void* input,
                                                    void* output, std::size_t count) {
  if (worker_calls_->size() == 1) {
    if (input != output) std::memcpy(output, input, count * element_size(type));
    return;
  }
  AllReduceOptions options;
  // kMean: the local step summed; the sum is divided once at the end.
  options.op = op == ReduceOp::kMean ? ReduceOp::kSum : op;
  options.algorithm = host_algorithm_for(options_.implementation, "CollectiveAllReduce");
  options.timeout = effective_timeout(options_);
  options.memory = MemoryKind::kHost;
  options.deterministic = options_.deterministic;
  // Elastic training recovers each call where it failed (worker_calls.h):
  // packs wait for their reductions.
  if (batch_in_flight.open && packs_may_stay_in_flight() && !worker_calls_->elastic()) {
    // Inside batch_reduce: the same call, left in flight while the next
    // pack is packed (finish_packs_in_flight waits).
    batch_in_flight.calls.push_back(
        worker_calls_->session().all_reduce_async(input, output, count, type, options));
    note_packs_in_flight(batch_in_flight.calls.size());
    return;
  }
  if (batch_in_flight.open) note_packs_in_flight(1);
  worker_calls_->session().all_reduce(input, output, count, type, options);
}

void CollectiveAllReduce::finish_packs_in_flight() {
  if (batch_in_flight.calls.empty()) return;
  worker_calls_->finish(batch_in_flight.calls);
}

void CollectiveAllReduce::reduce_pack(ReduceOp op, DataType type,
                                      std::span<const void* const> inputs, void* output,
                                      std::size_t count) {
  if (!options_.deterministic) return CrossDeviceOps::reduce_pack(op, type, inputs, output, count);
  if (inputs.size() > 1 && worker_calls_->size() > 1) {
    return gather_and_reduce_in_order(op, type, inputs, output, count);
  }
  // One worker, or one replica per worker: the local step in replica order
  // (whatever local_ops would do), then the library's ordered all-reduce,
  // whose arithmetic is the same (16-bit types in float32, rounded once).
  std::vector<int> order(inputs.size());
  for (std::size_t r = 0; r < order.size(); ++r) order[r] = static_cast<int>(r);
  detail::reduce_in_order(op == ReduceOp::kMean ? ReduceOp::kSum : op, type, inputs, order, output,
                          count);
  reduce_pack_across_workers(op, type, output, count);
}

void CollectiveAllReduce::gather_and_reduce_in_order(ReduceOp op, DataType type,
                                                     std::span<const void* const> inputs,
                                                     void* output, std::size_t count) {
  const std::size_t bytes = count * element_size(type);
  const std::size_t local = inputs.size();
  const std::size_t workers = static_cast<std::size_t>(worker_calls_->size());
  std::vector<std::byte> mine(local * bytes);
  for (std::size_t r = 0; r < local; ++r) {
    if (bytes > 0) std::memcpy(mine.data() + r * bytes, inputs[r], bytes);
  }
  std::vector<std::byte> all(workers * local * bytes);
  AllGatherOptions options;
  options.algorithm = host_algorithm_for(options_.implementation);
  options.timeout = effective_timeout(options_);
  options.memory = MemoryKind::kHost;
  worker_calls_->session().all_gather(mine.data(), all.data(), local * count, type, options);
  // Worker w's replica r is global replica w * local + r: its block.
  std::vector<const void*> replicas(workers * local);
  std::vector<int> order(replicas.size());
  for (std::size_t g = 0; g < replicas.size(); ++g) {
    replicas[g] = all.data() + g * bytes;
    order[g] = static_cast<int>(g);
  }
  detail::reduce_in_order(op == ReduceOp::kMean ? ReduceOp::kSum : op, type, replicas, order,
                          output, count);
}

}  // namespace collective::distribute
