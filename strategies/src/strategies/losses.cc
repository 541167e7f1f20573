#include "collective/distribute/losses.h"

#include <cstddef>
#include <string>
#include <vector>

#include "collective/distribute/strategy.h"
#include "collective/errors.h"
#include "values/element_math.h"

namespace collective::distribute {
namespace {

int error_rank() { return get_strategy().extended().worker_index(); }

void require_floating(const Tensor& value, const char* operation, const char* what) {
  if (!detail::is_floating(value.dtype())) {
    throw InvalidArgumentError(operation, error_rank(),
                               std::string(what) + " is " + value.debug_string() +
                                   "; it must be a floating type (float16, bfloat16, float32, "
                                   "float64)");
  }
}

// TF raises in the cross-replica context: there, num_replicas_in_sync is not
// what a replica's share of the loss should be divided by.
void require_replica_context(const char* operation) {
  if (has_strategy() && in_cross_replica_context()) {
    throw InvalidArgumentError(operation, error_rank(),
                               "called in the cross-replica context of " +
                                   std::string(get_strategy().name()) +
                                   "; call it inside run() (a replica context), where each "
                                   "replica scales its own loss");
  }
}

// One weight per loss element: sample_weight's index for each flat index of
// a tensor of loss_shape, after Keras's squeeze/expand of a trailing 1 and
// broadcasting of dimensions of size 1.
std::vector<double> broadcast_weights(const Tensor& sample_weight, const Shape& loss_shape,
                                      const char* operation) {
  Shape weight_shape = sample_weight.shape();
  const std::size_t rank = loss_shape.size();
  if (!weight_shape.empty()) {
    if (weight_shape.size() == rank + 1 && weight_shape.back() == 1) {
      weight_shape.pop_back();
    } else if (weight_shape.size() + 1 == rank && loss_shape.back() == 1) {
      weight_shape.push_back(1);
    }
  }
  bool compatible = weight_shape.empty() || weight_shape.size() == rank;
  for (std::size_t d = 0; compatible && !weight_shape.empty() && d < rank; ++d) {
    compatible = weight_shape[d] == loss_shape[d] || weight_shape[d] == 1;
  }
  if (!compatible) {
    throw InvalidArgumentError(operation, error_rank(),
                               "sample_weight of shape " + shape_string(sample_weight.shape()) +
                                   " cannot be broadcast to per_example_loss of shape " +
                                   shape_string(loss_shape) +
                                   " (it must be a scalar, or have each dimension equal to the "
                                   "loss's or 1)");
  }
  const std::vector<double> given = sample_weight.to_doubles();
  const std::size_t count = num_elements(loss_shape);
  if (weight_shape.empty()) return std::vector<double>(count, given.front());
  // Row-major strides of the weights, 0 along broadcast dimensions.
  std::vector<std::size_t> strides(rank, 0);
  std::size_t stride = 1;
  for (std::size_t d = rank; d-- > 0;) {
    strides[d] = weight_shape[d] == 1 ? 0 : stride;
    stride *= static_cast<std::size_t>(weight_shape[d]);
  }
  std::vector<double> weights(count);
  std::vector<std::size_t> index(rank, 0);
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t source = 0;
    for (std::size_t d = 0; d < rank; ++d) source += index[d] * strides[d];
    weights[i] = given[source];
    for (std::size_t d = rank; d-- > 0;) {
      if (++index[d] < static_cast<std::size_t>(loss_shape[d])) break;
      index[d] = 0;
    }
  }
  return weights;
}

}  // namespace

Tensor compute_average_loss(const Tensor& per_example_loss,
                            std::optional<std::int64_t> global_batch_size,
                            const std::optional<Tensor>& sample_weight) {
  constexpr const char* kOperation = "compute_average_loss";
  require_floating(per_example_loss, kOperation, "per_example_loss");
  if (per_example_loss.rank() == 0) {
    throw InvalidArgumentError(kOperation, error_rank(),
                               "per_example_loss is a scalar; it needs rank >= 1 (one loss per "
                               "example along dimension 0)");
  }
  if (global_batch_size.has_value() && *global_batch_size <= 0) {
    throw InvalidArgumentError(
        kOperation, error_rank(),
        "global_batch_size must be positive, got " + std::to_string(*global_batch_size));
  }
  std::vector<double> weights;
  if (sample_weight.has_value()) {
    weights = broadcast_weights(*sample_weight, per_example_loss.shape(), kOperation);
  }
  std::int64_t divisor = 0;
  if (global_batch_size.has_value()) {
    divisor = *global_batch_size;
  } else {
    require_replica_context(kOperation);
    divisor = per_example_loss.dim(0) * get_strategy().num_replicas_in_sync();
  }
  const std::vector<double> losses = per_example_loss.to_doubles();
  double sum = 0;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    sum += weights.empty() ? losses[i] : losses[i] * weights[i];
  }
  // An empty replica slice (divisor 0 only when no batch size is given and
  // the slice is empty) contributes 0, as TF's 0/0 would not: TF returns NaN
  // there, which poisons the summed loss of the other replicas.
  const double average = divisor == 0 ? 0.0 : sum / static_cast<double>(divisor);
  return Tensor::from_doubles(per_example_loss.dtype(), {average}, Shape{});
}

Tensor scale_regularization_loss(const Tensor& regularization_loss) {
  constexpr const char* kOperation = "scale_regularization_loss";
  require_floating(regularization_loss, kOperation, "regularization_loss");
  require_replica_context(kOperation);
  double sum = 0;
  for (double value : regularization_loss.to_doubles()) sum += value;
  return Tensor::from_doubles(regularization_loss.dtype(),
                              {sum / static_cast<double>(get_strategy().num_replicas_in_sync())},
                              Shape{});
}

}  // namespace collective::distribute
