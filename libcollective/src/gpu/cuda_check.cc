#include "gpu/cuda_check.h"

#include "collective/errors.h"

namespace collective::internal::gpu {

std::string cuda_error_text(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

void check_cuda(cudaError_t error, const char* call, const std::string& operation, int rank) {
  if (error == cudaSuccess) return;
  (void)cudaGetLastError();
  int device = -1;
  std::string where;
  if (cudaGetDevice(&device) == cudaSuccess) where = " on CUDA device " + std::to_string(device);
  (void)cudaGetLastError();
  throw CommunicationError(operation, rank,
                           std::string(call) + " failed" + where + ": " + cuda_error_text(error));
}

}  // namespace collective::internal::gpu
