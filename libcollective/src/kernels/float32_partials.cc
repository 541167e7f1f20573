#include "kernels/float32_partials.h"

#include "kernels/reduce_kernels.h"

namespace collective::internal {

namespace generic_kernels {
void reduce_widening_entry(void* dst, bool dst_wide, const void* a, const void* b, bool b_wide,
                           std::size_t count, DataType type, ReduceOp op, int divisor);
void widen_entry(float* dst, const void* src, std::size_t count, DataType type);
void narrow_entry(void* dst, const float* src, std::size_t count, DataType type, int divisor);
}  // namespace generic_kernels
namespace avx2_kernels {
void reduce_widening_entry(void* dst, bool dst_wide, const void* a, const void* b, bool b_wide,
                           std::size_t count, DataType type, ReduceOp op, int divisor);
void widen_entry(float* dst, const void* src, std::size_t count, DataType type);
void narrow_entry(void* dst, const float* src, std::size_t count, DataType type, int divisor);
}  // namespace avx2_kernels

void reduce_into_partial_with(KernelIsa isa, void* dst, bool dst_wide, const void* a, const void* b,
                              bool b_wide, std::size_t count, DataType type, ReduceOp op,
                              int divisor) {
  if (count == 0) return;
  if (op != ReduceOp::kMean || dst_wide) divisor = 1;
  if (isa == KernelIsa::kAvx2) {
    return avx2_kernels::reduce_widening_entry(dst, dst_wide, a, b, b_wide, count, type, op,
                                               divisor);
  }
  generic_kernels::reduce_widening_entry(dst, dst_wide, a, b, b_wide, count, type, op, divisor);
}

void reduce_into_partial(void* dst, bool dst_wide, const void* a, const void* b, bool b_wide,
                         std::size_t count, DataType type, ReduceOp op, int divisor) {
  reduce_into_partial_with(active_kernel_isa(), dst, dst_wide, a, b, b_wide, count, type, op,
                           divisor);
}

void widen_to_float32(float* dst, const void* src, std::size_t count, DataType type) {
  if (count == 0) return;
  if (active_kernel_isa() == KernelIsa::kAvx2) {
    return avx2_kernels::widen_entry(dst, src, count, type);
  }
  generic_kernels::widen_entry(dst, src, count, type);
}

void round_from_float32(void* dst, const float* src, std::size_t count, DataType type,
                        int divisor) {
  if (count == 0) return;
  if (active_kernel_isa() == KernelIsa::kAvx2) {
    return avx2_kernels::narrow_entry(dst, src, count, type, divisor);
  }
  generic_kernels::narrow_entry(dst, src, count, type, divisor);
}

}  // namespace collective::internal
