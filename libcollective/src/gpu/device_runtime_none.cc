// The device runtime of a build without CUDA: no devices, host memory only.
#include "collective/errors.h"
#include "gpu/device_runtime.h"

namespace collective::internal::gpu {

bool cuda_built_in() { return false; }

const DeviceCount& device_count() {
  static const DeviceCount none{0,
                                "this library was built without CUDA (COLLECTIVE_WITH_NCCL=OFF, "
                                "or CUDA and NCCL were not found when it was configured)"};
  return none;
}

PointerLocation locate(const void* pointer) {
  (void)pointer;
  return {};
}

void copy_device_bytes(void* dst, const void* src, std::size_t bytes, const std::string& operation,
                       int rank) {
  (void)dst;
  (void)src;
  (void)bytes;
  throw UnsupportedError(operation, rank, "device copy requested in a build without CUDA");
}

}  // namespace collective::internal::gpu
