// What the GPU tests share: device memory for a test buffer, this rank's
// place on its node, and the inputs of a reduction.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstddef>

#include "collective/collective.h"
#include "gpu/device_runtime.h"
#include "typed_buffer.h"

// In a test: fails it, naming the CUDA call and its error.
#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(call)

namespace collective::testing {

// Device memory for one test buffer.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&data_, bytes == 0 ? 1 : bytes) != cudaSuccess) data_ = nullptr;
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  std::byte* get() const { return static_cast<std::byte*>(data_); }
  bool ok() const { return data_ != nullptr; }
  void upload(const TypedBuffer& host) const {
    const std::size_t bytes = host.count() * element_size(host.type());
    if (bytes > 0) cudaMemcpy(data_, host.data(), bytes, cudaMemcpyHostToDevice);
  }
  void upload_zeros() const { cudaMemset(data_, 0, bytes_); }
  TypedBuffer download(DataType type) const {
    TypedBuffer host(type, bytes_ / element_size(type));
    if (bytes_ > 0) cudaMemcpy(host.data(), data_, bytes_, cudaMemcpyDeviceToHost);
    return host;
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

struct NodeShare {
  int local_rank = 0;
  int local_size = 1;
};

inline NodeShare node_share() {
  static const NodeShare share = [] {
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    NodeShare result;
    MPI_Comm_rank(node, &result.local_rank);
    MPI_Comm_size(node, &result.local_size);
    MPI_Comm_free(&node);
    return result;
  }();
  return share;
}

// A TypedBuffer holding rank `rank`'s inputs for `op`.
inline TypedBuffer inputs(ReduceOp op, DataType type, int rank, std::size_t count) {
  TypedBuffer buffer(type, count);
  for (std::size_t i = 0; i < count; ++i) buffer.set(i, input_value(op, type, rank, i));
  return buffer;
}

// A test that needs a CUDA device: skips, saying why, where CUDA finds none
// (the sentence ctest's SKIP_REGULAR_EXPRESSION matches). A fixture that
// derives calls this SetUp first and returns when IsSkipped().
class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& devices = internal::gpu::device_count();
    if (devices.count == 0) {
      GTEST_SKIP() << "GPU tests skipped: CUDA finds no device (" << devices.reason << ")";
    }
  }
  static int devices() { return internal::gpu::device_count().count; }

  Communicator world = Communicator::world();
  int p = world.size();
};

}  // namespace collective::testing
