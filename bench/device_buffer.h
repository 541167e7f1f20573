// GPU memory for --memory device, the buffers nccl-tests times: the library
// is called on device buffers, while the bench fills and checks host
// mirrors and copies them across outside the timed calls.
#pragma once

#include <cstddef>
#include <string>

namespace collective::bench {

// Whether this build can place buffers on a GPU (the NCCL path's CUDA).
bool device_buffers_built();

// The CUDA devices this process sees; with none, CUDA's reason.
struct VisibleDevices {
  int count = 0;
  std::string reason;
};
VisibleDevices visible_devices();

// Makes device `local_rank % devices` this process's current device,
// nccl-tests' rule, and returns "device N (NAME)". Throws
// std::runtime_error naming CUDA's reason when CUDA refuses.
std::string select_device(int local_rank, int devices);

// A device allocation that only grows (contents are not kept).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // std::runtime_error naming the size and CUDA's reason when it cannot.
  void reserve(std::size_t bytes);
  void* data() const { return data_; }
  // Whole-buffer copies between a host mirror and this buffer.
  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;

 private:
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace collective::bench
