#include "core/replica_gather.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "collective/errors.h"
#include "base/log.h"
#include "reduce/worker_calls.h"
#include "values/tensor_access.h"

namespace collective::distribute::detail {
namespace {

// One replica's value as the workers exchange it: int64 fields.
constexpr std::size_t kKindFields = 3;  // dtype, rank, axis as given
constexpr std::size_t kReplicaFields = kKindFields + kInlineRank;
// A worker's record starts with the number of values it was given.
constexpr std::int64_t kAbsent = -1;

// Every replica's value, as every worker sees it after the exchange.
class Replicas {
 public:
  Replicas(const GatherSetting& setting, std::string operation)
      : k_(static_cast<std::size_t>(setting.num_local_replicas)),
        workers_(static_cast<std::size_t>(setting.num_workers)),
        error_rank_(setting.worker_index),
        operation_(std::move(operation)),
        records_(workers_ * record_size()) {}

  std::size_t record_size() const { return 1 + k_ * kReplicaFields; }
  std::size_t count() const { return k_ * workers_; }
  std::int64_t* record(std::size_t worker) { return records_.data() + worker * record_size(); }
  std::vector<std::int64_t>& records() { return records_; }

  void describe(std::int64_t* record, std::span<const Tensor* const> values,
                std::span<const int> axes) const {
    record[0] = static_cast<std::int64_t>(values.size());
    for (std::size_t r = 0; r < k_; ++r) {
      std::int64_t* fields = record + 1 + r * kReplicaFields;
      for (std::size_t f = 0; f < kReplicaFields; ++f) fields[f] = kAbsent;
      if (r >= values.size()) continue;
      const Tensor& value = *values[r];
      fields[0] = static_cast<std::int64_t>(value.dtype());
      fields[1] = value.rank();
      fields[2] = axes[r];
      for (int d = 0; d < value.rank() && d < kInlineRank; ++d)
        fields[kKindFields + d] = value.dim(d);
    }
  }

  DataType dtype(std::size_t g) const { return static_cast<DataType>(field(g, 0)); }
  int rank(std::size_t g) const { return static_cast<int>(field(g, 1)); }
  int given_axis(std::size_t g) const { return static_cast<int>(field(g, 2)); }
  int axis(std::size_t g) const {
    return given_axis(g) < 0 ? given_axis(g) + rank(g) : given_axis(g);
  }
  const Shape& shape(std::size_t g) const { return shapes_[g]; }

  // Every check that needs no dimension: the number of values, scalars,
  // the axis, and that dtype, rank and axis agree.
  void check_kinds() const {
    for (std::size_t w = 0; w < workers_; ++w) {
      const std::int64_t given = records_[w * record_size()];
      if (given == static_cast<std::int64_t>(k_)) continue;
      const std::string who =
          workers_ == 1 ? std::string("got ") : "worker " + std::to_string(w) + " passed ";
      throw InvalidArgumentError(operation_, error_rank_,
                                 who + std::to_string(given) + " per-replica values for " +
                                     std::to_string(k_) + " local replicas");
    }
    for (std::size_t g = 0; g < count(); ++g) {
      if (rank(g) == 0) {
        throw InvalidArgumentError(operation_, error_rank_,
                                   name(g) + " holds a " + std::string(to_string(dtype(g))) +
                                       " scalar: cannot gather scalars along an axis; reshape "
                                       "them to [1] first");
      }
      if (axis(g) < 0 || axis(g) >= rank(g)) {
        throw InvalidArgumentError(
            operation_, error_rank_,
            name(g) + " gathers along axis " + std::to_string(given_axis(g)) +
                ", which is out of range for its rank " + std::to_string(rank(g)) + " value");
      }
      const std::size_t ref = reference(g);
      if (dtype(g) != dtype(ref) || rank(g) != rank(ref) || axis(g) != axis(ref)) {
        refuse(g, ref,
               name(g) + " gathers a rank " + std::to_string(rank(g)) + " " +
                   std::string(to_string(dtype(g))) + " value along axis " +
                   std::to_string(given_axis(g)) + ", " + name(ref) + " a rank " +
                   std::to_string(rank(ref)) + " " + std::string(to_string(dtype(ref))) +
                   " value along axis " + std::to_string(given_axis(ref)) +
                   ": they cannot be concatenated");
      }
    }
  }

  int agreed_rank() const { return rank(0); }
  bool needs_shape_exchange() const { return agreed_rank() > kInlineRank; }

  // Shapes from the first exchange (rank <= kInlineRank), or from
  // `full` (the second exchange: count() x rank dimensions).
  void take_shapes(const std::vector<std::int64_t>* full) {
    const std::size_t rank = static_cast<std::size_t>(agreed_rank());
    shapes_.assign(count(), Shape(rank));
    for (std::size_t g = 0; g < count(); ++g) {
      for (std::size_t d = 0; d < rank; ++d) {
        shapes_[g][d] = full != nullptr ? (*full)[g * rank + d] : field(g, kKindFields + d);
      }
    }
  }

  // Every dimension but the axis agrees with the replica's reference.
  void check_shapes() const {
    const int axis = this->axis(0);
    for (std::size_t g = 0; g < count(); ++g) {
      const std::size_t ref = reference(g);
      for (int d = 0; d < agreed_rank(); ++d) {
        const auto index = static_cast<std::size_t>(d);
        if (d == axis || shapes_[g][index] == shapes_[ref][index]) continue;
        refuse(g, ref,
               name(g) + " holds " + describe(g) + " and " + name(ref) + " holds " + describe(ref) +
                   ", which cannot be concatenated along axis " + std::to_string(given_axis(g)) +
                   ": only that dimension may differ (dimension " + std::to_string(d) + " is " +
                   std::to_string(shapes_[g][index]) + " against " +
                   std::to_string(shapes_[ref][index]) + ")");
      }
    }
  }

  // How many entries a worker's replicas add along the axis.
  std::int64_t worker_length(std::size_t w) const {
    std::int64_t length = 0;
    for (std::size_t r = 0; r < k_; ++r) length += shapes_[w * k_ + r][axis_index()];
    return length;
  }

  // The result's shape; InvalidArgumentError when it cannot be addressed.
  Shape result_shape() const {
    Shape shape = shapes_[0];
    std::int64_t total = 0;
    for (std::size_t g = 0; g < count(); ++g) {
      if (__builtin_add_overflow(total, shapes_[g][axis_index()], &total)) {
        throw InvalidArgumentError(operation_, error_rank_,
                                   "the replicas' lengths along axis " +
                                       std::to_string(given_axis(0)) +
                                       " add up to more than 2^63 - 1");
      }
    }
    shape[axis_index()] = total;
    (void)num_bytes(shape, dtype(0));  // raises naming the shape when too large
    return shape;
  }

  std::size_t axis_index() const { return static_cast<std::size_t>(axis(0)); }

 private:
  std::int64_t field(std::size_t g, std::size_t f) const {
    return records_[(g / k_) * record_size() + 1 + (g % k_) * kReplicaFields + f];
  }
  // A replica is compared with its worker's first replica, and that one
  // with worker 0's: a disagreement inside one worker is that worker's bad
  // input, one between workers a mismatch of the workers.
  std::size_t reference(std::size_t g) const { return g % k_ != 0 ? g - g % k_ : 0; }
  [[noreturn]] void refuse(std::size_t g, std::size_t ref, const std::string& cause) const {
    if (g / k_ == ref / k_) throw InvalidArgumentError(operation_, error_rank_, cause);
    throw MismatchError(operation_, error_rank_, cause);
  }
  std::string name(std::size_t g) const {
    if (workers_ == 1) return "local replica " + std::to_string(g);
    return "replica " + std::to_string(g) + " (worker " + std::to_string(g / k_) +
           ", local replica " + std::to_string(g % k_) + ")";
  }
  std::string describe(std::size_t g) const {
    return "Tensor(" + std::string(to_string(dtype(g))) + ", " + shape_string(shapes_[g]) + ")";
  }

  std::size_t k_;
  std::size_t workers_;
  int error_rank_;
  std::string operation_;
  std::vector<std::int64_t> records_;
  std::vector<Shape> shapes_;
};

// Blocks laid out as [outer][length][inner] concatenated along the middle
// dimension into out.
struct Block {
  const std::byte* bytes;
  std::size_t length;
};
void concat_blocks(std::byte* out, const std::vector<Block>& blocks, std::size_t outer,
                   std::size_t inner_bytes) {
  for (std::size_t o = 0; o < outer; ++o) {
    for (const Block& block : blocks) {
      const std::size_t bytes = block.length * inner_bytes;
      if (bytes == 0) continue;
      std::memcpy(out, block.bytes + o * bytes, bytes);
      out += bytes;
    }
  }
}

// libcollective's ring does not implement all_gather_v: under
// CollectiveCommunication::kRing the values move as AUTO chooses
// (docs/strategies.md), said once per process.
Algorithm data_algorithm(Algorithm configured) {
  if (configured != Algorithm::kRing) return configured;
  static std::once_flag said;
  std::call_once(said, [] {
    DISTRIBUTE_LOG(kInfo,
                   "CollectiveCommunication::kRing: Strategy.gather and "
                   "ReplicaContext.all_gather move their values with all_gather_v, "
                   "which ring does not implement; AUTO chooses its algorithm");
  });
  return Algorithm::kAuto;
}

}  // namespace

Tensor gather_replicas(const GatherSetting& setting, std::span<const Tensor* const> values,
                       std::span<const int> axes, const std::string& operation) {
  Replicas replicas(setting, operation);
  const std::size_t workers = static_cast<std::size_t>(setting.num_workers);
  const std::size_t me = static_cast<std::size_t>(setting.worker_index);
  AllGatherOptions options;
  options.algorithm = setting.algorithm;
  options.timeout = setting.timeout;
  options.memory = MemoryKind::kHost;

  // What every worker gathers, checked alike on every worker.
  std::vector<std::int64_t> mine(replicas.record_size());
  replicas.describe(mine.data(), values, axes);
  if (workers == 1) {
    std::memcpy(replicas.record(0), mine.data(), mine.size() * sizeof(std::int64_t));
  } else {
    setting.worker_calls->session().all_gather(mine.data(), replicas.records().data(), mine.size(),
                                               DataType::kInt64, options);
  }
  replicas.check_kinds();
  if (replicas.needs_shape_exchange()) {
    std::vector<std::int64_t> my_shapes;
    for (const Tensor* value : values)
      my_shapes.insert(my_shapes.end(), value->shape().begin(), value->shape().end());
    std::vector<std::int64_t> all_shapes(workers * my_shapes.size());
    if (workers == 1) {
      all_shapes = my_shapes;
    } else {
      setting.worker_calls->session().all_gather(my_shapes.data(), all_shapes.data(),
                                                 my_shapes.size(), DataType::kInt64, options);
    }
    replicas.take_shapes(&all_shapes);
  } else {
    replicas.take_shapes(nullptr);
  }
  replicas.check_shapes();
  const Shape shape = replicas.result_shape();

  // The result, laid out [outer][total length][inner].
  const DataType dtype = values.front()->dtype();
  const std::size_t axis = replicas.axis_index();
  std::size_t outer = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= static_cast<std::size_t>(shape[d]);
  std::size_t inner = 1;
  for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= static_cast<std::size_t>(shape[d]);
  const std::size_t inner_bytes = inner * element_size(dtype);
  Tensor result = TensorAccess::uninitialized(dtype, shape);
  if (result.num_bytes() == 0) return result;

  std::vector<Block> local;
  for (const Tensor* value : values) {
    local.push_back({static_cast<const std::byte*>(value->raw_data()),
                     static_cast<std::size_t>(value->dim(static_cast<int>(axis)))});
  }
  auto* out = static_cast<std::byte*>(result.raw_data());
  if (workers == 1) {
    concat_blocks(out, local, outer, inner_bytes);
    return result;
  }

  // Worker w's block is its replicas' values concatenated along the axis:
  // counts and displacements in elements.
  std::vector<std::size_t> counts(workers), displacements(workers);
  std::size_t next = 0;
  for (std::size_t w = 0; w < workers; ++w) {
    counts[w] = outer * static_cast<std::size_t>(replicas.worker_length(w)) * inner;
    displacements[w] = next;
    next += counts[w];
  }
  // Along axis 0 the blocks are the result's own pieces: gathered in place.
  // Along another axis they arrive one after another and are interleaved.
  Tensor staging =
      axis == 0 ? Tensor() : TensorAccess::uninitialized(dtype, {static_cast<std::int64_t>(next)});
  auto* gathered = axis == 0 ? out : static_cast<std::byte*>(staging.raw_data());
  std::byte* my_block = gathered + displacements[me] * element_size(dtype);
  concat_blocks(my_block, local, outer, inner_bytes);
  AllGatherOptions data_options = options;
  data_options.algorithm = data_algorithm(setting.algorithm);
  setting.worker_calls->session().all_gather_v(my_block, counts[me], gathered, counts,
                                               displacements, dtype, data_options);
  if (axis != 0) {
    std::vector<Block> blocks;
    for (std::size_t w = 0; w < workers; ++w) {
      blocks.push_back({gathered + displacements[w] * element_size(dtype),
                        static_cast<std::size_t>(replicas.worker_length(w))});
    }
    concat_blocks(out, blocks, outer, inner_bytes);
  }
  return result;
}

}  // namespace collective::distribute::detail
