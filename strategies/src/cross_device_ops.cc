#include "collective/distribute/cross_device_ops.h"

#include <cstring>
#include <memory>
#include <map>

#include "collective/errors.h"
#include "element_math.h"
#include "log.h"

namespace collective::distribute {

CrossDeviceOps::~CrossDeviceOps() = default;

Tensor CrossDeviceOps::reduce(ReduceOp op, const PerReplica<Tensor>& per_replica_value) {
  return batch_reduce(op, {per_replica_value}).front();
}

std::vector<Tensor> CrossDeviceOps::batch_reduce(
    ReduceOp op, const std::vector<PerReplica<Tensor>>& per_replica_values) {
  const std::string operation = std::string(name()) + ".batch_reduce";
  if (static_cast<int>(op) < 0 || static_cast<int>(op) >= kNumReduceOps) {
    throw InvalidArgumentError(operation, -1,
                               "unknown ReduceOp value " + std::to_string(static_cast<int>(op)));
  }
  if (per_replica_values.empty()) return {};
  const std::size_t replicas = per_replica_values.front().num_replicas();
  for (std::size_t i = 0; i < per_replica_values.size(); ++i) {
    const PerReplica<Tensor>& value = per_replica_values[i];
    if (value.num_replicas() == 0 || value.num_replicas() != replicas) {
      throw InvalidArgumentError(operation, -1,
                                 "value " + std::to_string(i) + " has " +
                                     std::to_string(value.num_replicas()) +
                                     " per-replica values; value 0 has " + std::to_string(replicas) +
                                     " (need the same number, at least one)");
    }
    for (std::size_t r = 1; r < replicas; ++r) {
      if (value[r].dtype() != value[0].dtype() || value[r].shape() != value[0].shape()) {
        throw InvalidArgumentError(operation, -1,
                                   "value " + std::to_string(i) + ": replica " + std::to_string(r) +
                                       " holds " + value[r].debug_string() + ", replica 0 holds " +
                                       value[0].debug_string());
      }
    }
  }
  // Values of one dtype share packs; dtypes go in order of first appearance
  // (the same on every worker, given the same calls).
  std::vector<DataType> dtype_order;
  std::map<DataType, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < per_replica_values.size(); ++i) {
    const DataType type = per_replica_values[i][0].dtype();
    if (groups.find(type) == groups.end()) dtype_order.push_back(type);
    groups[type].push_back(i);
  }
  std::vector<Tensor> results(per_replica_values.size());
  for (DataType type : dtype_order) {
    const std::vector<std::size_t>& indices = groups[type];
    std::vector<Tensor> reduced = reduce_group(op, per_replica_values, indices);
    for (std::size_t j = 0; j < indices.size(); ++j) results[indices[j]] = std::move(reduced[j]);
  }
  return results;
}

std::vector<Tensor> CrossDeviceOps::reduce_group(ReduceOp op,
                                                 const std::vector<PerReplica<Tensor>>& values,
                                                 const std::vector<std::size_t>& indices) {
  const std::size_t replicas = values[indices.front()].num_replicas();
  const DataType type = values[indices.front()][0].dtype();
  const std::size_t element = element_size(type);
  std::vector<std::size_t> sizes;
  std::size_t total = 0;
  for (std::size_t index : indices) {
    sizes.push_back(values[index][0].num_elements());
    total += sizes.back();
  }

  // One contiguous buffer per replica: the tensor itself when there is one,
  // else the concatenation (the packing copy). Buffers that are written in
  // full before they are read are left uninitialized: zero-filling a
  // megabyte costs as much as copying it.
  std::vector<std::unique_ptr<std::byte[]>> staging;
  std::vector<const void*> inputs(replicas);
  const bool single = indices.size() == 1;
  if (single) {
    for (std::size_t r = 0; r < replicas; ++r) inputs[r] = values[indices.front()][r].raw_data();
  } else {
    staging.resize(replicas);
    for (std::size_t r = 0; r < replicas; ++r) {
      staging[r].reset(new std::byte[total * element]);
      std::size_t offset = 0;
      for (std::size_t index : indices) {
        const Tensor& t = values[index][r];
        if (t.num_bytes() > 0) std::memcpy(staging[r].get() + offset, t.raw_data(), t.num_bytes());
        offset += t.num_bytes();
      }
      inputs[r] = staging[r].get();
    }
  }

  // A single tensor is reduced straight into its result; packed tensors
  // into one buffer that is split afterwards.
  Tensor single_result;
  std::unique_ptr<std::byte[]> packed_output;
  std::byte* output_data = nullptr;
  if (single) {
    single_result = Tensor(type, values[indices.front()][0].shape());
    output_data = static_cast<std::byte*>(single_result.raw_data());
  } else {
    packed_output.reset(new std::byte[total * element]);
    output_data = packed_output.get();
  }
  std::vector<const void*> shifted(replicas);
  for (const PackRange& pack : plan_packs(sizes, element)) {
    if (pack.num_elements == 0) continue;
    const std::size_t offset = pack.first_element * element;
    for (std::size_t r = 0; r < replicas; ++r) {
      shifted[r] = static_cast<const std::byte*>(inputs[r]) + offset;
    }
    reduce_pack(op, type, shifted, output_data + offset, pack.num_elements);
    packs_reduced_.fetch_add(1);
  }
  if (op == ReduceOp::kMean) {
    detail::divide_in_place(type, output_data, total,
                            static_cast<std::int64_t>(replicas) * num_workers());
  }

  std::vector<Tensor> results;
  if (single) {
    results.push_back(std::move(single_result));
    return results;
  }
  std::size_t offset = 0;
  for (std::size_t index : indices) {
    Tensor result(type, values[index][0].shape());
    if (result.num_bytes() > 0) {
      std::memcpy(result.raw_data(), output_data + offset, result.num_bytes());
    }
    offset += result.num_bytes();
    results.push_back(std::move(result));
  }
  return results;
}

Mirrored<Tensor> CrossDeviceOps::broadcast(const Tensor& value, std::size_t num_local_replicas) const {
  return Mirrored<Tensor>(std::vector<Tensor>(num_local_replicas, value));
}

void CrossDeviceOps::reduce_pack_across_workers(ReduceOp, DataType, void*, std::size_t) {}

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

std::vector<PackRange> ReductionToOneDevice::plan_packs(const std::vector<std::size_t>& tensor_sizes,
                                                        std::size_t) const {
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
    DISTRIBUTE_LOG(kWarn, "NcclAllReduce: the replicas' tensors are in host memory, which NCCL "
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
      communicator_mutex_(std::move(communicator_mutex)) {
  if (!local_ops_) local_ops_ = std::make_unique<ReductionToOneDevice>();
  if (!communicator_mutex_) communicator_mutex_ = std::make_shared<std::mutex>();
}

int CollectiveAllReduce::num_workers() const { return communicator_.size(); }

void CollectiveAllReduce::reduce_replica_buffers(ReduceOp op, DataType type,
                                                 std::span<const void* const> inputs, void* output,
                                                 std::size_t count) {
  local_ops_->reduce_replica_buffers(op, type, inputs, output, count);
}

std::vector<PackRange> CollectiveAllReduce::plan_packs(const std::vector<std::size_t>& tensor_sizes,
                                                       std::size_t element_size) const {
  std::vector<PackRange> packs;
  std::size_t first = 0;
  if (options_.bytes_per_pack == 0) {
    for (std::size_t size : tensor_sizes) first += size;
    packs.push_back(PackRange{0, first});
    return packs;
  }
  // Greedy on tensor boundaries: a pack closes when the next tensor would
  // take it past bytes_per_pack; a larger tensor is a pack of its own.
  PackRange current{0, 0};
  for (std::size_t size : tensor_sizes) {
    if (current.num_elements > 0 &&
        (current.num_elements + size) * element_size > options_.bytes_per_pack) {
      packs.push_back(current);
      current = PackRange{first, 0};
    }
    current.num_elements += size;
    first += size;
  }
  if (current.num_elements > 0) packs.push_back(current);
  return packs;
}

void CollectiveAllReduce::reduce_pack_across_workers(ReduceOp op, DataType type, void* buffer,
                                                     std::size_t count) {
  if (communicator_.size() == 1) return;
  if (options_.implementation == CommunicationImplementation::kNccl) {
    std::call_once(nccl_fallback_logged_, [] {
      DISTRIBUTE_LOG(kWarn, "CommunicationImplementation NCCL: tensors are in host memory, which "
                            "NCCL does not serve; the cross-worker all-reduce uses RING instead");
    });
  }
  AllReduceOptions options;
  // kMean: the local step summed; the sum is divided once at the end.
  options.op = op == ReduceOp::kMean ? ReduceOp::kSum : op;
  options.algorithm = host_algorithm_for(options_.implementation);
  options.timeout = effective_timeout(options_);
  options.memory = MemoryKind::kHost;
  options.deterministic = options_.deterministic;
  std::lock_guard<std::mutex> lock(*communicator_mutex_);
  communicator_.all_reduce(buffer, buffer, count, type, options);
}

void CollectiveAllReduce::reduce_pack(ReduceOp op, DataType type,
                                      std::span<const void* const> inputs, void* output,
                                      std::size_t count) {
  if (!options_.deterministic) return CrossDeviceOps::reduce_pack(op, type, inputs, output, count);
  if (inputs.size() > 1 && communicator_.size() > 1) {
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
  const std::size_t workers = static_cast<std::size_t>(communicator_.size());
  std::vector<std::byte> mine(local * bytes);
  for (std::size_t r = 0; r < local; ++r) {
    if (bytes > 0) std::memcpy(mine.data() + r * bytes, inputs[r], bytes);
  }
  std::vector<std::byte> all(workers * local * bytes);
  AllGatherOptions options;
  options.algorithm = host_algorithm_for(options_.implementation);
  options.timeout = effective_timeout(options_);
  options.memory = MemoryKind::kHost;
  {
    std::lock_guard<std::mutex> lock(*communicator_mutex_);
    communicator_.all_gather(mine.data(), all.data(), local * count, type, options);
  }
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
