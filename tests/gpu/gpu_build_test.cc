// Runs on every machine, GPU or not: the NCCL path is in the library exactly
// when CMake found CUDA and NCCL, and asking for NCCL on host buffers
// behaves as documented (docs/gpu.md): a forced nccl raises UnsupportedError
// naming nccl before any buffer is touched, and AUTO never picks it.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "collective/collective.h"
#include "gpu/device_runtime.h"

#ifndef COLLECTIVE_TEST_EXPECT_NCCL
#error "CMake passes COLLECTIVE_TEST_EXPECT_NCCL (1 when it found CUDA and NCCL)"
#endif

namespace {

using collective::Algorithm;
using collective::CollectiveKind;
using collective::Communicator;
using collective::DataType;
using collective::MemoryKind;

constexpr bool kExpectNccl = COLLECTIVE_TEST_EXPECT_NCCL != 0;

TEST(GpuBuild, NcclPathIsBuiltInExactlyWhenCudaAndNcclWereFound) {
  EXPECT_EQ(collective::built_with_nccl(), kExpectNccl)
      << "CMake " << (kExpectNccl ? "found" : "did not find")
      << " CUDA and NCCL, but built_with_nccl() says otherwise";
  EXPECT_EQ(collective::internal::gpu::cuda_built_in(), kExpectNccl);
  const auto* nccl = collective::internal::find_algorithm(Algorithm::kNccl);
  EXPECT_EQ(nccl != nullptr, kExpectNccl) << "the registry and the build disagree about nccl";
}

TEST(GpuBuild, DeviceCountNeverFailsAndExplainsZero) {
  const auto& devices = collective::internal::gpu::device_count();
  EXPECT_GE(devices.count, 0);
  if (devices.count == 0) {
    EXPECT_FALSE(devices.reason.empty()) << "zero devices without a reason";
  }
}

// Every rank checks every collective; nothing communicates, so a rank
// count of 1, 2 or 3 only changes sizes.
class ForcedNcclOnHostBuffers : public testing::Test {
 protected:
  // `reason` is what a build with NCCL must say: the buffers are host
  // memory, or (barrier) that NCCL has none.
  static void expect_unsupported(const char* what, const std::function<void()>& call,
                                 const char* reason = "host memory") {
    try {
      call();
      ADD_FAILURE() << what << ": forced nccl on host buffers did not raise";
    } catch (const collective::UnsupportedError& error) {
      const std::string text = error.what();
      EXPECT_NE(text.find("nccl"), std::string::npos)
          << what << ": message does not name nccl: " << text;
      if (kExpectNccl) {
        EXPECT_NE(text.find(reason), std::string::npos)
            << what << ": message does not say \"" << reason << "\": " << text;
      } else {
        EXPECT_NE(text.find("not built into this library"), std::string::npos)
            << what << ": message does not say nccl is not built in: " << text;
      }
    } catch (const std::exception& error) {
      ADD_FAILURE() << what << ": expected UnsupportedError, got: " << error.what();
    }
  }

  Communicator world = Communicator::world();
  const std::size_t count = 37;
  const std::size_t p = static_cast<std::size_t>(world.size());
  std::vector<float> send = std::vector<float>(count * p, 1.5f);
  std::vector<float> recv = std::vector<float>(count * p, -7.0f);

  void expect_recv_untouched() {
    for (std::size_t i = 0; i < recv.size(); ++i) {
      ASSERT_EQ(recv[i], -7.0f) << "rank " << world.rank() << " index " << i
                                << ": recv was written by a call that raised";
    }
  }
};

TEST_F(ForcedNcclOnHostBuffers, EveryCollectiveRaisesUnsupportedNamingNccl) {
  collective::AllReduceOptions all_reduce;
  all_reduce.algorithm = Algorithm::kNccl;
  expect_unsupported("all_reduce", [&] {
    world.all_reduce(send.data(), recv.data(), count, DataType::kFloat32, all_reduce);
  });
  collective::ReduceScatterOptions reduce_scatter;
  reduce_scatter.algorithm = Algorithm::kNccl;
  expect_unsupported("reduce_scatter", [&] {
    world.reduce_scatter(send.data(), recv.data(), count, DataType::kFloat32, reduce_scatter);
  });
  collective::AllGatherOptions all_gather;
  all_gather.algorithm = Algorithm::kNccl;
  expect_unsupported("all_gather", [&] {
    world.all_gather(send.data(), recv.data(), count, DataType::kFloat32, all_gather);
  });
  collective::ReduceOptions reduce;
  reduce.algorithm = Algorithm::kNccl;
  expect_unsupported(
      "reduce", [&] { world.reduce(send.data(), recv.data(), count, DataType::kFloat32, reduce); });
  expect_recv_untouched();
  collective::BroadcastOptions broadcast;
  broadcast.algorithm = Algorithm::kNccl;
  expect_unsupported("broadcast",
                     [&] { world.broadcast(recv.data(), count, DataType::kFloat32, broadcast); });
  expect_recv_untouched();
  collective::BarrierOptions barrier;
  barrier.algorithm = Algorithm::kNccl;
  expect_unsupported(
      "barrier", [&] { world.barrier(barrier); }, "nccl does not implement barrier");
}

TEST_F(ForcedNcclOnHostBuffers, DeclaredHostMemoryRaisesTooAndCommunicatorStaysUsable) {
  collective::AllReduceOptions options;
  options.algorithm = Algorithm::kNccl;
  options.memory = MemoryKind::kHost;
  expect_unsupported("all_reduce (MemoryKind::kHost)", [&] {
    world.all_reduce(send.data(), recv.data(), count, DataType::kFloat32, options);
  });
  expect_recv_untouched();
  // UnsupportedError leaves the communicator usable: the same call on AUTO
  // runs on a host algorithm and gives the exact sum.
  options.algorithm = Algorithm::kAuto;
  world.all_reduce(send.data(), recv.data(), count, DataType::kFloat32, options);
  EXPECT_NE(world.last_algorithm(), Algorithm::kNccl);
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_EQ(recv[i], 1.5f * static_cast<float>(p)) << "rank " << world.rank() << " index " << i;
  }
}

TEST(GpuBuild, AutoNeverChoosesNcclForHostBuffers) {
  Communicator world = Communicator::world();
  for (const auto kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter, CollectiveKind::kAllGather,
        CollectiveKind::kBroadcast, CollectiveKind::kReduce, CollectiveKind::kBarrier}) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1} << 20}) {
      EXPECT_NE(world.choose_algorithm(kind, count, DataType::kFloat32), Algorithm::kNccl)
          << collective::to_string(kind) << " count " << count;
    }
  }
  std::vector<std::int32_t> values(1000, world.rank() + 1);
  world.all_reduce(std::span<std::int32_t>(values));
  EXPECT_NE(world.last_algorithm(), Algorithm::kNccl);
  const int expected = world.size() * (world.size() + 1) / 2;
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(values[i], expected) << "rank " << world.rank() << " index " << i;
  }
}

TEST(GpuBuild, DeclaringDeviceMemoryForHostBuffersIsRefusedBeforeTouchingThem) {
  Communicator world = Communicator::world();
  std::vector<double> send(11, 2.0);
  std::vector<double> recv(11, -1.0);
  collective::AllReduceOptions options;
  options.memory = MemoryKind::kDevice;
  try {
    world.all_reduce(send.data(), recv.data(), send.size(), DataType::kFloat64, options);
    ADD_FAILURE() << "host buffers declared MemoryKind::kDevice were accepted";
  } catch (const collective::UnsupportedError& error) {
    // A build without CUDA cannot serve device buffers at all.
    EXPECT_FALSE(kExpectNccl) << error.what();
    EXPECT_NE(std::string(error.what()).find("MemoryKind::kDevice"), std::string::npos)
        << error.what();
  } catch (const collective::InvalidArgumentError& error) {
    // With CUDA: either no device exists, or the pointer is not device memory.
    EXPECT_TRUE(kExpectNccl) << error.what();
    const std::string text = error.what();
    const bool explained = text.find("finds no device") != std::string::npos ||
                           text.find("host memory") != std::string::npos;
    EXPECT_TRUE(explained) << text;
  }
  for (std::size_t i = 0; i < recv.size(); ++i) {
    ASSERT_EQ(recv[i], -1.0) << "rank " << world.rank() << " index " << i;
  }
}

}  // namespace
