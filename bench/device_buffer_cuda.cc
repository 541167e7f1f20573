// DeviceBuffer over the CUDA runtime (builds with the NCCL path).
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "device_buffer.h"

namespace collective::bench {
namespace {

[[noreturn]] void fail(const std::string& what, cudaError_t error) {
  throw std::runtime_error("--memory device: " + what + " failed: " + cudaGetErrorName(error) +
                           " (" + cudaGetErrorString(error) + ")");
}

}  // namespace

bool device_buffers_built() { return true; }

VisibleDevices visible_devices() {
  int devices = 0;
  if (const cudaError_t error = cudaGetDeviceCount(&devices); error != cudaSuccess) {
    return VisibleDevices{0, std::string("cudaGetDeviceCount: ") + cudaGetErrorName(error) + " (" +
                                 cudaGetErrorString(error) + ")"};
  }
  if (devices == 0) return VisibleDevices{0, "cudaGetDeviceCount found none"};
  return VisibleDevices{devices, ""};
}

std::string select_device(int local_rank, int devices) {
  const int device = local_rank % devices;
  if (const cudaError_t error = cudaSetDevice(device); error != cudaSuccess) {
    fail("cudaSetDevice(" + std::to_string(device) + ")", error);
  }
  cudaDeviceProp properties{};
  if (const cudaError_t error = cudaGetDeviceProperties(&properties, device);
      error != cudaSuccess) {
    fail("cudaGetDeviceProperties", error);
  }
  return "device " + std::to_string(device) + " (" + properties.name + ")";
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

void DeviceBuffer::reserve(std::size_t bytes) {
  if (bytes <= capacity_ && data_ != nullptr) return;
  if (data_ != nullptr) cudaFree(data_);
  data_ = nullptr;
  capacity_ = 0;
  const std::size_t size = bytes == 0 ? 1 : bytes;
  if (const cudaError_t error = cudaMalloc(&data_, size); error != cudaSuccess) {
    data_ = nullptr;
    fail("cudaMalloc(" + std::to_string(size) + " B)", error);
  }
  // Defined contents, as the host buffers' zeroed pages.
  if (const cudaError_t error = cudaMemset(data_, 0, size); error != cudaSuccess) {
    fail("cudaMemset", error);
  }
  capacity_ = size;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  if (bytes == 0) return;
  if (const cudaError_t error = cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice);
      error != cudaSuccess) {
    fail("cudaMemcpy to the device", error);
  }
}

void DeviceBuffer::download(void* host, std::size_t bytes) const {
  if (bytes == 0) return;
  if (const cudaError_t error = cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost);
      error != cudaSuccess) {
    fail("cudaMemcpy from the device", error);
  }
}

}  // namespace collective::bench
