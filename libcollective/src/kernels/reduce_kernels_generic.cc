// Portable build of the reduction loops (see reduce_kernels_impl.h).
#define COLLECTIVE_KERNEL_NAMESPACE generic_kernels
#include "kernels/reduce_kernels_impl.h"

namespace collective::internal::generic_kernels {
void reduce_entry(void* dst, const void* a, const void* b, std::size_t count, DataType type,
                  ReduceOp op, int divisor) {
  reduce(dst, a, b, count, type, op, divisor);
}
void reduce_widening_entry(void* dst, bool dst_wide, const void* a, const void* b, bool b_wide,
                           std::size_t count, DataType type, ReduceOp op, int divisor) {
  reduce_widening(dst, dst_wide, a, b, b_wide, count, type, op, divisor);
}
void widen_entry(float* dst, const void* src, std::size_t count, DataType type) {
  widen(dst, src, count, type);
}
void narrow_entry(void* dst, const float* src, std::size_t count, DataType type, int divisor) {
  narrow(dst, src, count, type, divisor);
}
}  // namespace collective::internal::generic_kernels
