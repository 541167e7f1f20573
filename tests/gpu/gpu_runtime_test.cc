// The parts of the GPU path that need no device: CUDA and NCCL error
// translation, type and op mapping, pointer classification, node layouts,
// the hierarchical variant's shapes and its selection rule. Runs anywhere
// the NCCL path is built, with or without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

#include "algorithms/nccl/nccl_hierarchical.h"
#include "algorithms/nccl/nccl_node_layout.h"
#include "algorithms/nccl/nccl_types.h"
#include "collective/errors.h"
#include "gpu/cuda_check.h"
#include "gpu/device_runtime.h"
#include "gpu/memory_kind.h"

namespace {

using namespace collective;
using namespace collective::internal;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CudaErrors, TextNamesTheErrorAndItsDescription) {
  const std::string text = gpu::cuda_error_text(cudaErrorNoDevice);
  EXPECT_TRUE(contains(text, "cudaErrorNoDevice")) << text;
  EXPECT_TRUE(contains(text, cudaGetErrorString(cudaErrorNoDevice))) << text;
}

TEST(CudaErrors, CheckThrowsCommunicationErrorNamingCallOperationAndRank) {
  EXPECT_NO_THROW(gpu::check_cuda(cudaSuccess, "cudaFoo", "all_reduce #3", 2));
  try {
    gpu::check_cuda(cudaErrorInvalidValue, "cudaMemcpyAsync", "all_reduce #3", 2);
    FAIL() << "no exception";
  } catch (const CommunicationError& error) {
    EXPECT_EQ(error.operation(), "all_reduce #3");
    EXPECT_EQ(error.rank(), 2);
    EXPECT_TRUE(contains(error.cause(), "cudaMemcpyAsync failed")) << error.what();
    EXPECT_TRUE(contains(error.cause(), "cudaErrorInvalidValue")) << error.what();
  }
}

TEST(NcclErrors, TextNamesTheResult) {
  const std::string text = nccl_error_text(ncclInvalidArgument, nullptr);
  EXPECT_TRUE(contains(text, "ncclInvalidArgument")) << text;
  EXPECT_TRUE(contains(text, ncclGetErrorString(ncclInvalidArgument))) << text;
}

TEST(NcclLibrary, LinkedVersionIsTheHeadersVersion) {
  const std::string header = std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
                             std::to_string(NCCL_PATCH);
  EXPECT_EQ(nccl_runtime_version(), header);
}

TEST(NcclTypes, EveryDataTypeMapsToTheNcclTypeOfItsSize) {
  const std::pair<DataType, ncclDataType_t> expected[] = {
      {DataType::kFloat16, ncclFloat16}, {DataType::kBFloat16, ncclBfloat16},
      {DataType::kFloat32, ncclFloat32}, {DataType::kFloat64, ncclFloat64},
      {DataType::kInt8, ncclInt8},       {DataType::kUInt8, ncclUint8},
      {DataType::kInt32, ncclInt32},     {DataType::kInt64, ncclInt64}};
  static_assert(std::size(expected) == kNumDataTypes);
  for (const auto& [type, nccl] : expected) {
    EXPECT_EQ(nccl_data_type(type), nccl) << to_string(type);
  }
}

TEST(NcclTypes, EveryReduceOpMapsAndMeanIsAvg) {
  EXPECT_EQ(nccl_red_op(ReduceOp::kSum), ncclSum);
  EXPECT_EQ(nccl_red_op(ReduceOp::kMean), ncclAvg);
  EXPECT_EQ(nccl_red_op(ReduceOp::kMin), ncclMin);
  EXPECT_EQ(nccl_red_op(ReduceOp::kMax), ncclMax);
  EXPECT_EQ(nccl_red_op(ReduceOp::kProd), ncclProd);
}

TEST(DeviceRuntime, HostPointersAreHostMemory) {
  const auto heap = std::make_unique<int[]>(16);
  int stack = 0;
  EXPECT_FALSE(gpu::locate(heap.get()).on_device);
  EXPECT_FALSE(gpu::locate(&stack).on_device);
  EXPECT_FALSE(gpu::locate(nullptr).on_device);
}

TEST(DeviceRuntime, DeviceCountIsProbedOnceAndExplainsZero) {
  const gpu::DeviceCount& first = gpu::device_count();
  EXPECT_EQ(&first, &gpu::device_count());
  if (first.count == 0) {
    EXPECT_TRUE(contains(first.reason, "cudaGetDeviceCount")) << first.reason;
  } else {
    int count = 0;
    ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
    EXPECT_EQ(first.count, count);
  }
}

Request host_request(MemoryKind declared, const void* send, void* recv) {
  Request request;
  request.kind = CollectiveKind::kAllReduce;
  request.send = send;
  request.recv = recv;
  request.count = 4;
  request.memory = declared;
  return request;
}

TEST(MemoryKind, HostBuffersResolveToHost) {
  std::vector<float> send(4), recv(4);
  EXPECT_EQ(gpu::resolve_memory_kind(host_request(MemoryKind::kAuto, send.data(), recv.data()), 0),
            MemoryKind::kHost);
  EXPECT_EQ(gpu::resolve_memory_kind(host_request(MemoryKind::kHost, send.data(), recv.data()), 0),
            MemoryKind::kHost);
}

TEST(MemoryKind, DeclaredDeviceForHostBuffersIsAnInvalidArgument) {
  std::vector<float> send(4), recv(4);
  try {
    gpu::resolve_memory_kind(host_request(MemoryKind::kDevice, send.data(), recv.data()), 1);
    FAIL() << "accepted";
  } catch (const InvalidArgumentError& error) {
    EXPECT_EQ(error.rank(), 1);
    if (gpu::device_count().count == 0) {
      EXPECT_TRUE(contains(error.cause(), "finds no device")) << error.what();
    } else {
      EXPECT_TRUE(contains(error.cause(), "send buffer is host memory")) << error.what();
    }
  }
}

TEST(MemoryKind, NoBuffersKeepTheDeclaredKind) {
  Request barrier;
  barrier.kind = CollectiveKind::kBarrier;
  barrier.memory = MemoryKind::kAuto;
  EXPECT_EQ(gpu::resolve_memory_kind(barrier, 0), MemoryKind::kHost);
}

TEST(NodeLayout, ConsecutiveRanksPerHost) {
  const std::vector<std::string> hosts = {"a", "a", "b", "b"};
  const NodeLayout layout = node_layout_from_hosts(hosts, 3);
  EXPECT_EQ(layout.world_size, 4);
  EXPECT_EQ(layout.node_count, 2);
  EXPECT_EQ(layout.node_index, 1);
  EXPECT_EQ(layout.local_rank, 1);
  EXPECT_EQ(layout.local_size, 2);
  EXPECT_TRUE(layout.uniform());
}

TEST(NodeLayout, InterleavedHostsAreNumberedByLowestRank) {
  const std::vector<std::string> hosts = {"b", "a", "b", "a", "b", "a"};
  for (int rank = 0; rank < 6; ++rank) {
    const NodeLayout layout = node_layout_from_hosts(hosts, rank);
    EXPECT_EQ(layout.node_index, rank % 2) << "rank " << rank;
    EXPECT_EQ(layout.local_rank, rank / 2) << "rank " << rank;
    EXPECT_EQ(layout.local_size, 3) << "rank " << rank;
    EXPECT_EQ(layout.node_count, 2);
  }
}

TEST(NodeLayout, UnequalNodesAreNotUniform) {
  const std::vector<std::string> hosts = {"a", "a", "a", "b"};
  const NodeLayout on_b = node_layout_from_hosts(hosts, 3);
  EXPECT_EQ(on_b.local_size, 1);
  EXPECT_EQ(on_b.local_rank, 0);
  EXPECT_EQ(on_b.min_local_size, 1);
  EXPECT_EQ(on_b.max_local_size, 3);
  EXPECT_FALSE(on_b.uniform());
}

TEST(HierarchicalShape, BlocksAndTailCoverTheBufferExactlyOnce) {
  for (std::size_t count : {0u, 1u, 3u, 4u, 5u, 7u, 1000u, 1001u}) {
    for (int local_size = 1; local_size <= 5; ++local_size) {
      std::vector<int> covered(count, 0);
      for (int local_rank = 0; local_rank < local_size; ++local_rank) {
        const HierarchicalShape shape = hierarchical_shape(count, local_size, local_rank);
        EXPECT_EQ(shape.block, count / static_cast<std::size_t>(local_size));
        EXPECT_EQ(shape.block_offset, static_cast<std::size_t>(local_rank) * shape.block);
        EXPECT_EQ(shape.tail_offset + shape.tail, count);
        for (std::size_t i = 0; i < shape.block; ++i) ++covered[shape.block_offset + i];
        if (local_rank == 0) {
          for (std::size_t i = 0; i < shape.tail; ++i) ++covered[shape.tail_offset + i];
        }
      }
      for (std::size_t i = 0; i < count; ++i) {
        ASSERT_EQ(covered[i], 1) << "count " << count << " local_size " << local_size << " index "
                                 << i;
      }
    }
  }
}

NodeLayout layout_of(int nodes, int per_node) {
  std::vector<std::string> hosts;
  for (int n = 0; n < nodes; ++n) {
    for (int l = 0; l < per_node; ++l) hosts.push_back("host" + std::to_string(n));
  }
  return node_layout_from_hosts(hosts, 0);
}

TEST(NcclPlan, HierarchicalOnlyForAllReduceAcrossUniformNodesWithSeveralRanksEach) {
  const auto plan = [](CollectiveKind kind, const NodeLayout& layout,
                       HierarchicalMode mode = HierarchicalMode::kAuto) {
    return choose_nccl_plan(kind, layout, mode);
  };
  EXPECT_TRUE(plan(CollectiveKind::kAllReduce, layout_of(2, 4)).hierarchical);
  EXPECT_TRUE(plan(CollectiveKind::kAllReduce, layout_of(3, 2)).hierarchical);
  EXPECT_FALSE(plan(CollectiveKind::kAllReduce, layout_of(1, 8)).hierarchical);
  EXPECT_FALSE(plan(CollectiveKind::kAllReduce, layout_of(4, 1)).hierarchical);
  EXPECT_FALSE(plan(CollectiveKind::kReduceScatter, layout_of(2, 4)).hierarchical);
  EXPECT_FALSE(plan(CollectiveKind::kBroadcast, layout_of(2, 4)).hierarchical);
  EXPECT_FALSE(
      plan(CollectiveKind::kAllReduce, layout_of(2, 4), HierarchicalMode::kOff).hierarchical);
  const NcclPlan uneven =
      plan(CollectiveKind::kAllReduce, node_layout_from_hosts({"a", "a", "a", "b"}, 0));
  EXPECT_FALSE(uneven.hierarchical);
  EXPECT_TRUE(contains(uneven.reason, "different numbers of ranks")) << uneven.reason;
}

}  // namespace
