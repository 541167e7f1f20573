// Internal constructors of Tensor for the layer's own results, whose every
// byte is written before anyone reads them: they skip the zero-fill that
// the public constructor owes its callers.
#pragma once

#include "collective/distribute/tensor.h"

namespace collective::distribute::detail {

struct TensorAccess {
  static Tensor uninitialized(DataType dtype, Shape shape) {
    return Tensor(dtype, std::move(shape), Tensor::Uninitialized{});
  }
};

}  // namespace collective::distribute::detail
