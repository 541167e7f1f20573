#include "gpu/device_guard.h"

#include <cuda_runtime_api.h>

#include "core/log.h"
#include "gpu/cuda_check.h"

namespace collective::internal::gpu {

DeviceGuard::DeviceGuard(int device, const std::string& operation, int rank) {
  COLLECTIVE_CUDA_CHECK(cudaGetDevice(&previous_), operation, rank);
  if (previous_ == device) return;
  COLLECTIVE_CUDA_CHECK(cudaSetDevice(device), operation, rank);
}

DeviceGuard::~DeviceGuard() {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current == previous_) return;
  // Destructors never throw: a failure to restore is only logged.
  const cudaError_t error = cudaSetDevice(previous_);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    COLLECTIVE_LOG(kWarn, "could not make CUDA device "
                              << previous_ << " current again: " << cuda_error_text(error));
  }
}

}  // namespace collective::internal::gpu
