// Loss scaling for synchronous training (tf.nn.compute_average_loss and
// tf.nn.scale_regularization_loss). Under a strategy the gradients of all
// replicas are summed, so each replica must scale its loss by the global
// batch, not by its own slice of it: then the summed gradient is the global
// batch's mean gradient, whatever the number of replicas.
#pragma once

#include <cstdint>
#include <optional>

#include "collective/distribute/tensor.h"

namespace collective::distribute {

// sum(per_example_loss * sample_weight) / global_batch_size, a scalar of
// per_example_loss's dtype.
//   per_example_loss  a floating tensor of rank >= 1 (dimension 0 is the
//                     batch); rank 0 raises InvalidArgumentError, as TF's
//                     ValueError does.
//   global_batch_size positive. Unset: per_example_loss.dim(0) x
//                     num_replicas_in_sync of the current strategy, which
//                     needs a replica context (inside run()) when a strategy
//                     is in scope (InvalidArgumentError otherwise, as TF's
//                     RuntimeError); without a strategy, dim(0). A replica
//                     whose slice is empty (the end of an epoch) then gets 0,
//                     its share of the sum, where TF's 0/0 gives NaN.
//   sample_weight     any numeric dtype, converted to the loss's: a scalar, a
//                     tensor of the loss's shape or broadcastable to it (each
//                     dimension equal or 1), or one of rank one more or less
//                     than the loss's that differs by a trailing dimension 1
//                     (squeezed or expanded, as Keras does).
// Products and the sum are computed in double and rounded once to the
// loss's dtype.
Tensor compute_average_loss(const Tensor& per_example_loss,
                            std::optional<std::int64_t> global_batch_size = std::nullopt,
                            const std::optional<Tensor>& sample_weight = std::nullopt);

// sum(regularization_loss) / num_replicas_in_sync, a scalar of its dtype
// (floating, any rank). With a strategy in scope it must be called in a
// replica context (InvalidArgumentError in the cross-replica context, as
// TF's RuntimeError). Summed in double and rounded once.
Tensor scale_regularization_loss(const Tensor& regularization_loss);

}  // namespace collective::distribute
