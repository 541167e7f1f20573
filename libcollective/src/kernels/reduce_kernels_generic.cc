// Portable build of the reduction loops (see reduce_kernels_impl.h).
#define COLLECTIVE_KERNEL_NAMESPACE generic_kernels
#include "kernels/reduce_kernels_impl.h"
