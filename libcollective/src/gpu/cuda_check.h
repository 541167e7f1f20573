// Translation of CUDA runtime return codes into the library's exceptions,
// at the boundary where CUDA is called. Internal: includes CUDA headers.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace collective::internal::gpu {

// "cudaErrorInvalidValue (invalid argument)".
std::string cuda_error_text(cudaError_t error);

// Throws CommunicationError "<operation> (rank r): <call> failed on CUDA
// device d: <text>" when error is not cudaSuccess. The sticky last error is
// cleared first, so a later call does not report this one again.
void check_cuda(cudaError_t error, const char* call, const std::string& operation, int rank);

}  // namespace collective::internal::gpu

#define COLLECTIVE_CUDA_CHECK(call, operation, rank) \
  ::collective::internal::gpu::check_cuda((call), #call, (operation), (rank))
