// The device runtime of a build with CUDA (see device_runtime.h).
#include <cuda_runtime_api.h>

#include "core/log.h"
#include "gpu/cuda_check.h"
#include "gpu/device_guard.h"
#include "gpu/device_runtime.h"

namespace collective::internal::gpu {
namespace {

DeviceCount probe_devices() {
  DeviceCount result;
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    // No driver or no device: a CPU-only machine, which is no failure. The
    // runtime leaves the error sticky; clear it so later calls are not
    // blamed for it.
    (void)cudaGetLastError();
    result.reason = "cudaGetDeviceCount returned " + cuda_error_text(error);
  } else if (count == 0) {
    result.reason = "cudaGetDeviceCount found 0 devices";
  } else {
    result.count = count;
  }
  if (result.count == 0) {
    COLLECTIVE_LOG(kInfo,
                   "CUDA finds no device (" << result.reason << "); every buffer is host memory");
  } else {
    COLLECTIVE_LOG(kDebug, "CUDA finds " << result.count << " device(s)");
  }
  return result;
}

}  // namespace

bool cuda_built_in() { return true; }

const DeviceCount& device_count() {
  static const DeviceCount devices = probe_devices();
  return devices;
}

PointerLocation locate(const void* pointer) {
  if (pointer == nullptr || device_count().count == 0) return {};
  cudaPointerAttributes attributes{};
  const cudaError_t error = cudaPointerGetAttributes(&attributes, pointer);
  if (error != cudaSuccess) {
    // Pointers CUDA has never seen are host memory (older runtimes said so
    // with cudaErrorInvalidValue instead of cudaMemoryTypeUnregistered).
    (void)cudaGetLastError();
    return {};
  }
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged: return PointerLocation{true, attributes.device};
    case cudaMemoryTypeHost:
    case cudaMemoryTypeUnregistered:
    default: return {};
  }
}

void copy_device_bytes(void* dst, const void* src, std::size_t bytes, const std::string& operation,
                       int rank) {
  if (bytes == 0 || dst == src) return;
  const PointerLocation target = locate(dst);
  DeviceGuard guard(target.on_device ? target.device : 0, operation, rank);
  // The legacy default stream orders the copy after the caller's work on
  // it; a device-to-device cudaMemcpy would not wait for the copy itself.
  COLLECTIVE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cudaStreamLegacy),
                        operation, rank);
  COLLECTIVE_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy), operation, rank);
}

}  // namespace collective::internal::gpu
