// DeviceBuffer in a build without the NCCL path: --memory device is
// refused before the run (main.cc), so nothing here is reached.
#include <stdexcept>

#include "device_buffer.h"

namespace collective::bench {
namespace {

[[noreturn]] void unavailable() {
  throw std::logic_error("--memory device: this build has no CUDA (the NCCL path is off)");
}

}  // namespace

bool device_buffers_built() { return false; }
VisibleDevices visible_devices() { return VisibleDevices{0, "this build has no CUDA"}; }
std::string select_device(int, int) { unavailable(); }
DeviceBuffer::~DeviceBuffer() = default;
void DeviceBuffer::reserve(std::size_t) { unavailable(); }
void DeviceBuffer::upload(const void*, std::size_t) { unavailable(); }
void DeviceBuffer::download(void*, std::size_t) const { unavailable(); }

}  // namespace collective::bench
