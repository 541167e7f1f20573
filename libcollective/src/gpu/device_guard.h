// Makes a CUDA device current for a scope and restores the caller's device
// afterwards, so the library never changes which device the caller's own
// CUDA calls go to.
#pragma once

#include <string>

namespace collective::internal::gpu {

class DeviceGuard {
 public:
  // Throws CommunicationError (naming operation and rank) when the device
  // cannot be made current.
  DeviceGuard(int device, const std::string& operation, int rank);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace collective::internal::gpu
