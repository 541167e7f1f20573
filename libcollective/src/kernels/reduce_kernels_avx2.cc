// AVX2 + F16C + FMA build of the reduction loops (see reduce_kernels_impl.h);
// compiled with -mavx2 -mf16c -mfma and called only where the CPU has them.
#define COLLECTIVE_KERNEL_NAMESPACE avx2_kernels
#define COLLECTIVE_KERNEL_F16C 1
#include "kernels/reduce_kernels_impl.h"
