// What the library asks the CUDA runtime: how many devices there are, where
// a pointer lives, and a device-to-device copy. The header needs no CUDA;
// device_runtime_cuda.cc implements it in builds with the NCCL path and
// device_runtime_none.cc (no devices, every pointer is host memory) in
// builds without.
#pragma once

#include <cstddef>
#include <string>

namespace collective::internal::gpu {

// True when this library was built with the CUDA runtime.
bool cuda_built_in();

// The CUDA devices this process sees, probed once. A runtime without a
// driver (cudaErrorInsufficientDriver, cudaErrorNoDevice) counts as zero
// devices, never as a failure; `reason` then says why, for logs and for
// the skip messages of the GPU tests.
struct DeviceCount {
  int count = 0;
  std::string reason;  // set when count == 0
};
const DeviceCount& device_count();

// Where a buffer lives, by cudaPointerGetAttributes. CUDA device memory and
// managed memory are "on device"; pageable and pinned host memory are not.
struct PointerLocation {
  bool on_device = false;
  int device = -1;  // the CUDA device, when on_device
};
PointerLocation locate(const void* pointer);

// Copies bytes between two device buffers and waits for the copy (the
// one-rank form of a collective on device buffers). Throws
// CommunicationError naming `operation` and `rank` on a CUDA failure.
void copy_device_bytes(void* dst, const void* src, std::size_t bytes, const std::string& operation,
                       int rank);

}  // namespace collective::internal::gpu
