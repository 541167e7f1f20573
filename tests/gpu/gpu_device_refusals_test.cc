// Device buffers in calls that no algorithm serves on them: refused with
// an UnsupportedError naming the operation and rank before recv is
// touched, the communicator still usable. Nothing here sets NCCL up, so
// ranks may share a device: rank r takes device (local rank % devices),
// and one GPU runs every rank count. Skips, saying why, where CUDA finds
// no device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "collective/collective.h"
#include "gpu_test_support.h"
#include "typed_buffer.h"

namespace {

using namespace collective;
namespace helpers = collective::testing;
using collective::testing::CudaDeviceTest;
using collective::testing::DeviceBuffer;
using collective::testing::inputs;
using collective::testing::node_share;

class DeviceBuffersRefused : public CudaDeviceTest {
 protected:
  void SetUp() override {
    CudaDeviceTest::SetUp();
    if (IsSkipped()) return;
    CUDA_OK(cudaSetDevice(node_share().local_rank % devices()));
  }
};

TEST_F(DeviceBuffersRefused, CollectivesNcclDoesNotServeRaiseBeforeTouchingRecv) {
  // NCCL serves five collectives; the others on device buffers are an
  // UnsupportedError naming the collective, raised on every rank before
  // recv is touched, and the communicator stays usable.
  const std::size_t count = 5;
  const std::size_t total = count * static_cast<std::size_t>(p);
  DeviceBuffer send(total * sizeof(std::int32_t));
  DeviceBuffer recv(total * sizeof(std::int32_t));
  ASSERT_TRUE(send.ok() && recv.ok());
  send.upload(inputs(ReduceOp::kSum, DataType::kInt32, world.rank(), total));
  std::vector<std::size_t> counts(static_cast<std::size_t>(p), count);
  std::vector<std::size_t> displacements(static_cast<std::size_t>(p));
  for (int q = 0; q < p; ++q)
    displacements[static_cast<std::size_t>(q)] = count * static_cast<std::size_t>(q);
  const DataType type = DataType::kInt32;
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"all_to_all", [&] { world.all_to_all(send.get(), recv.get(), count, type); }},
      {"all_to_all_v",
       [&] {
         world.all_to_all_v(send.get(), counts, displacements, recv.get(), counts, displacements,
                            type);
       }},
      {"all_gather_v",
       [&] { world.all_gather_v(send.get(), count, recv.get(), counts, displacements, type); }},
      {"reduce_scatter_v", [&] { world.reduce_scatter_v(send.get(), recv.get(), counts, type); }},
      {"gather", [&] { world.gather(send.get(), recv.get(), count, type); }},
      {"gather_v",
       [&] { world.gather_v(send.get(), count, recv.get(), counts, displacements, type); }},
      {"scatter", [&] { world.scatter(send.get(), recv.get(), count, type); }},
      {"scatter_v",
       [&] { world.scatter_v(send.get(), counts, displacements, recv.get(), count, type); }},
  };
  for (const auto& [name, call] : calls) {
    recv.upload_zeros();
    try {
      call();
      ADD_FAILURE() << name << " on device buffers returned";
    } catch (const UnsupportedError& error) {
      const std::string text = error.what();
      EXPECT_NE(text.find(name), std::string::npos) << text;
      EXPECT_NE(text.find("rank " + std::to_string(world.rank())), std::string::npos) << text;
    }
    const auto after = recv.download(type);
    ASSERT_TRUE(
        helpers::check_elements(after, 0, total, world.rank(), [](std::size_t) { return 0.0; }))
        << name << " touched recv";
  }
  if (p > 1) {
    // NCCL has no bitwise reduction, and no other algorithm takes device buffers.
    AllReduceOptions band;
    band.op = ReduceOp::kBitwiseAnd;
    recv.upload_zeros();
    try {
      world.all_reduce(send.get(), recv.get(), count, type, band);
      ADD_FAILURE() << "all_reduce band on device buffers returned";
    } catch (const UnsupportedError& error) {
      const std::string text = error.what();
      EXPECT_NE(text.find("nccl has no band"), std::string::npos) << text;
      EXPECT_NE(text.find("rank " + std::to_string(world.rank())), std::string::npos) << text;
    }
    ASSERT_TRUE(helpers::check_elements(recv.download(type), 0, total, world.rank(),
                                        [](std::size_t) { return 0.0; }))
        << "all_reduce band touched recv";
  }
  if (p > 1) {
    // send and recv over MPI take host memory only: a device buffer is
    // refused by where it is, declared or not, before MPI could read it.
    const int peer = (world.rank() + 1) % p;
    EXPECT_THROW(world.send(send.get(), count, type, peer), UnsupportedError);
    EXPECT_THROW(world.recv(recv.get(), count, type, peer), UnsupportedError);
  }
  // The communicator stays usable (a host call: NCCL may not be set up
  // where ranks share a device).
  std::vector<std::int32_t> host(total, world.rank() + 1);
  world.all_reduce(host.data(), host.data(), total, type);
  for (std::size_t i = 0; i < total; ++i) {
    ASSERT_EQ(host[i], p * (p + 1) / 2) << "rank " << world.rank() << " index " << i;
  }
}

}  // namespace
