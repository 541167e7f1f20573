#include "core/strategy_impl.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "collective/errors.h"
#include "base/call_purpose.h"
#include "core/context_stack.h"
#include "values/element_math.h"
#include "reduce/worker_calls.h"

namespace collective::distribute::detail {
namespace {

std::atomic<std::uint64_t> g_next_serial{1};

}  // namespace

std::string StrategyImpl::label() const { return name + " #" + std::to_string(serial); }

void StrategyImpl::finish_setup() {
  serial = g_next_serial.fetch_add(1);
  if (num_local_replicas > 1) threads = std::make_unique<ReplicaThreads>(num_local_replicas);
  if (!cross_device_ops) cross_device_ops = std::make_shared<ReductionToOneDevice>();
  if (timeout.count() <= 0) timeout = effective_timeout(communication_options);
}

void validate_per_replica(const StrategyImpl& impl, const PerReplica<Tensor>& value,
                          const std::string& operation, std::size_t value_index) {
  const std::string which = "value " + std::to_string(value_index);
  if (value.num_replicas() != static_cast<std::size_t>(impl.num_local_replicas)) {
    throw InvalidArgumentError(operation, impl.error_rank(),
                               which + " has " + std::to_string(value.num_replicas()) +
                                   " per-replica values but " + impl.label() + " has " +
                                   std::to_string(impl.num_local_replicas) + " local replicas");
  }
  const Tensor& first = value[0];
  for (std::size_t r = 1; r < value.num_replicas(); ++r) {
    if (value[r].dtype() != first.dtype() || value[r].shape() != first.shape()) {
      throw InvalidArgumentError(operation, impl.error_rank(),
                                 which + ": local replica " + std::to_string(r) + " holds " +
                                     value[r].debug_string() + " but replica 0 holds " +
                                     first.debug_string());
    }
  }
}

int normalize_axis(int axis, int rank, const std::string& operation, int error_rank) {
  const int normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank) {
    throw InvalidArgumentError(operation, error_rank,
                               "axis " + std::to_string(axis) + " is out of range for rank " +
                                   std::to_string(rank) + " values");
  }
  return normalized;
}

std::vector<Tensor> StrategyImpl::batch_reduce(ReduceOp op,
                                               const std::vector<PerReplica<Tensor>>& values) {
  std::vector<std::vector<const Tensor*>> views(values.size());
  for (std::size_t v = 0; v < values.size(); ++v) {
    for (const Tensor& replica_value : values[v].values()) views[v].push_back(&replica_value);
  }
  return batch_reduce_views(op, views);
}

Tensor StrategyImpl::reduce_one(ReduceOp op, const PerReplica<Tensor>& value) {
  std::vector<std::vector<const Tensor*>> views(1);
  for (const Tensor& replica_value : value.values()) views[0].push_back(&replica_value);
  return std::move(batch_reduce_views(op, views).front());
}

std::vector<Tensor> StrategyImpl::batch_reduce_views(
    ReduceOp op, const std::vector<std::vector<const Tensor*>>& values) {
  // Messages are built only for an error: this is every step's path.
  const auto operation = [this] { return label() + " batch_reduce"; };
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::vector<const Tensor*>& value = values[i];
    const auto which = [i] { return "value " + std::to_string(i); };
    if (value.size() != static_cast<std::size_t>(num_local_replicas)) {
      throw InvalidArgumentError(operation(), error_rank(),
                                 which() + " has " + std::to_string(value.size()) +
                                     " per-replica values but " + label() + " has " +
                                     std::to_string(num_local_replicas) + " local replicas");
    }
    for (std::size_t r = 1; r < value.size(); ++r) {
      if (value[r]->dtype() != value[0]->dtype() || value[r]->shape() != value[0]->shape()) {
        throw InvalidArgumentError(operation(), error_rank(),
                                   which() + ": local replica " + std::to_string(r) + " holds " +
                                       value[r]->debug_string() + " but replica 0 holds " +
                                       value[0]->debug_string());
      }
    }
  }
  return cross_device_ops->batch_reduce_views(op, values);
}

bool StrategyImpl::any_worker(bool local, const std::string& operation) {
  if (num_workers == 1) return local;
  std::int32_t flag = local ? 1 : 0;
  AllReduceOptions options;
  options.op = ReduceOp::kMax;
  options.algorithm = host_algorithm_for(communication_options.implementation, operation);
  options.timeout = timeout;
  options.memory = MemoryKind::kHost;
  const CallPurpose purpose("whether any worker has input left");
  try {
    worker_calls->session().all_reduce(&flag, &flag, 1, DataType::kInt32, options);
  } catch (const MismatchError&) {
    throw;  // names both sides already
  } catch (const Error& error) {
    throw CommunicationError(
        operation, error_rank(),
        "workers could not agree whether input remains: " + std::string(error.what()));
  }
  return flag != 0;
}

Tensor StrategyImpl::broadcast_from_chief(const Tensor& value, const std::string& what,
                                          const std::string& operation) {
  if (num_workers == 1) return value;
  // Agree on dtype and shape before the bytes move: the maximum of each
  // field and of its negation gives every worker the extremes, so all of
  // them see a disagreement and raise together (no worker is left waiting).
  std::uint64_t shape_hash = 1469598103934665603ull;  // FNV-1a over the dims
  for (std::int64_t d : value.shape()) {
    shape_hash = (shape_hash ^ static_cast<std::uint64_t>(d)) * 1099511628211ull;
  }
  const std::int64_t fields[3] = {static_cast<std::int64_t>(value.dtype()), value.rank(),
                                  static_cast<std::int64_t>(shape_hash >> 1)};
  std::int64_t extremes[6];
  for (int i = 0; i < 3; ++i) {
    extremes[i] = fields[i];
    extremes[i + 3] = -fields[i];
  }
  WorkerCalls::Session calls = worker_calls->session();
  AllReduceOptions check;
  check.op = ReduceOp::kMax;
  check.algorithm = host_algorithm_for(communication_options.implementation, operation);
  check.timeout = timeout;
  check.memory = MemoryKind::kHost;
  calls.all_reduce(extremes, extremes, 6, DataType::kInt64, check);
  for (int i = 0; i < 3; ++i) {
    if (extremes[i] != -extremes[i + 3]) {
      throw MismatchError(operation, error_rank(),
                          what + " is " + value.debug_string() +
                              " on this worker, but the workers disagree on its dtype or shape; "
                              "every worker must create the same variables in the same order");
    }
  }
  Tensor result = value;
  if (result.num_bytes() == 0) return result;
  BroadcastOptions options;
  options.root = 0;
  options.algorithm = check.algorithm;
  options.timeout = timeout;
  options.memory = MemoryKind::kHost;
  calls.broadcast(result.raw_data(), result.num_bytes(), DataType::kUInt8, options);
  return result;
}

Tensor StrategyImpl::gather(const PerReplica<Tensor>& value, int axis,
                            const std::string& operation) {
  if (value.num_replicas() != static_cast<std::size_t>(num_local_replicas)) {
    throw InvalidArgumentError(operation, error_rank(),
                               "got " + std::to_string(value.num_replicas()) +
                                   " per-replica values for " + std::to_string(num_local_replicas) +
                                   " local replicas");
  }
  const Tensor& first = value[0];
  if (first.rank() == 0) {
    throw InvalidArgumentError(operation, error_rank(),
                               "cannot gather scalars along an axis; reshape them to [1] first");
  }
  const int dim = normalize_axis(axis, first.rank(), operation, error_rank());
  for (std::size_t r = 0; r < value.num_replicas(); ++r) {
    const Tensor& t = value[r];
    bool compatible = t.dtype() == first.dtype() && t.rank() == first.rank();
    for (int d = 0; compatible && d < t.rank(); ++d) {
      if (d != dim && t.dim(d) != first.dim(d)) compatible = false;
    }
    if (!compatible) {
      throw InvalidArgumentError(
          operation, error_rank(),
          "local replica " + std::to_string(r) + " holds " + t.debug_string() +
              ", which cannot be concatenated along axis " + std::to_string(axis) +
              " with replica 0's " + first.debug_string());
    }
  }
  Tensor local = concat(value.values(), dim);
  if (num_workers == 1) return local;

  // Across workers: agree on dtype and shape, pad along the axis to the
  // longest worker's length, all-gather the bytes, drop the padding.
  WorkerCalls::Session calls = worker_calls->session();
  AllGatherOptions options;
  options.algorithm = host_algorithm_for(communication_options.implementation, operation);
  options.timeout = timeout;
  options.memory = MemoryKind::kHost;
  const std::size_t workers = static_cast<std::size_t>(num_workers);
  std::vector<std::int64_t> header{static_cast<std::int64_t>(local.dtype()), local.rank()};
  std::vector<std::int64_t> headers(2 * workers);
  calls.all_gather(header.data(), headers.data(), 2, DataType::kInt64, options);
  for (std::size_t w = 0; w < workers; ++w) {
    if (headers[2 * w] != header[0] || headers[2 * w + 1] != header[1]) {
      throw MismatchError(operation, error_rank(),
                          "worker " + std::to_string(w) + " gathers a rank " +
                              std::to_string(headers[2 * w + 1]) + " " +
                              std::string(to_string(static_cast<DataType>(headers[2 * w]))) +
                              " value, this worker a rank " + std::to_string(header[1]) + " " +
                              std::string(to_string(local.dtype())) + " value");
    }
  }
  const std::size_t rank = static_cast<std::size_t>(local.rank());
  std::vector<std::int64_t> dims(local.shape().begin(), local.shape().end());
  std::vector<std::int64_t> all_dims(rank * workers);
  calls.all_gather(dims.data(), all_dims.data(), rank, DataType::kInt64, options);
  std::int64_t longest = 0;
  for (std::size_t w = 0; w < workers; ++w) {
    for (std::size_t d = 0; d < rank; ++d) {
      if (static_cast<int>(d) != dim && all_dims[w * rank + d] != dims[d]) {
        throw MismatchError(
            operation, error_rank(),
            "worker " + std::to_string(w) + " gathers dimension " + std::to_string(d) +
                " of size " + std::to_string(all_dims[w * rank + d]) + ", this worker " +
                std::to_string(dims[d]) + " (only axis " + std::to_string(axis) + " may differ)");
      }
    }
    longest = std::max(longest, all_dims[w * rank + static_cast<std::size_t>(dim)]);
  }
  Shape padded_shape = local.shape();
  padded_shape[static_cast<std::size_t>(dim)] = longest;
  Tensor padding(local.dtype(), [&] {
    Shape s = local.shape();
    s[static_cast<std::size_t>(dim)] = longest - local.dim(dim);
    return s;
  }());
  const Tensor padded = concat({local, padding}, dim);
  std::vector<std::byte> gathered(padded.num_bytes() * workers);
  calls.all_gather(padded.raw_data(), gathered.data(), padded.num_bytes(), DataType::kUInt8,
                   options);
  std::vector<Tensor> parts;
  parts.reserve(workers);
  for (std::size_t w = 0; w < workers; ++w) {
    Tensor worker_padded(local.dtype(), padded_shape);
    if (padded.num_bytes() > 0) {
      std::memcpy(worker_padded.raw_data(), gathered.data() + w * padded.num_bytes(),
                  padded.num_bytes());
    }
    // Keep the first all_dims[w][dim] entries along the axis.
    Shape kept_shape = padded_shape;
    kept_shape[static_cast<std::size_t>(dim)] = all_dims[w * rank + static_cast<std::size_t>(dim)];
    Tensor kept(local.dtype(), kept_shape);
    std::size_t outer = 1;
    for (int d = 0; d < dim; ++d)
      outer *= static_cast<std::size_t>(padded_shape[static_cast<std::size_t>(d)]);
    std::size_t inner_bytes = element_size(local.dtype());
    for (std::size_t d = static_cast<std::size_t>(dim) + 1; d < rank; ++d) {
      inner_bytes *= static_cast<std::size_t>(padded_shape[d]);
    }
    const std::size_t padded_row = static_cast<std::size_t>(longest) * inner_bytes;
    const std::size_t kept_row =
        static_cast<std::size_t>(kept_shape[static_cast<std::size_t>(dim)]) * inner_bytes;
    for (std::size_t o = 0; o < outer && kept_row > 0; ++o) {
      std::memcpy(static_cast<std::byte*>(kept.raw_data()) + o * kept_row,
                  static_cast<const std::byte*>(worker_padded.raw_data()) + o * padded_row,
                  kept_row);
    }
    parts.push_back(std::move(kept));
  }
  return concat(parts, dim);
}

void StrategyImpl::require_cross_replica(const std::string& operation) const {
  const ContextFrame* frame = current_frame();
  if (frame != nullptr && frame->replica != nullptr) {
    throw InvalidArgumentError(operation, error_rank(),
                               "called in a replica context (inside run()); it needs the "
                               "cross-replica context: call it outside run(), or from a "
                               "ReplicaContext::merge_call function");
  }
}

Tensor StrategyImpl::reduce_to(ReduceOp op, const PerReplica<Tensor>& value) {
  require_cross_replica(label() + " reduce_to");
  const CallPurpose purpose("StrategyExtended.reduce_to");
  return reduce_one(op, value);
}

}  // namespace collective::distribute::detail
