// Portable build of the reduction loops (see reduce_kernels_impl.h).
#define COLLECTIVE_KERNEL_NAMESPACE generic_kernels
#include "kernels/reduce_kernels_impl.h"

namespace collective::internal::generic_kernels {
void reduce_entry(void* dst, const void* a, const void* b, std::size_t count, DataType type,
                  ReduceOp op, int divisor) {
  reduce(dst, a, b, count, type, op, divisor);
}
}  // namespace collective::internal::generic_kernels
