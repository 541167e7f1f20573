// Collectives on CUDA device buffers through NCCL: every collective, type
// and op, counts from 0 up, in place and out of place, every element
// checked. Needs one CUDA device per rank on each node; without, every test
// skips with "GPU tests skipped: <why>" (ctest lists them as skipped).
// Registered at 1-4 ranks, and at 4 ranks with COLLECTIVE_NCCL_RANKS_PER_NODE=2
// so that one machine with 4 GPUs runs the hierarchical variant too.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
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
using collective::testing::NodeShare;

const DataType kTypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                           DataType::kFloat64, DataType::kInt8,     DataType::kUInt8,
                           DataType::kInt32,   DataType::kInt64};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                         ReduceOp::kProd};

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// Checks a reduction result. Exact, except for one documented case: ncclAvg
// on floating types sums inputs pre-multiplied by 1/p, exact only when p is
// a power of two; otherwise the error bound of p roundings of products and
// p - 1 of sums applies, (p + 2) eps sum|x|.
::testing::AssertionResult check_reduction(const helpers::TypedBuffer& actual, std::size_t first,
                                           std::size_t count, ReduceOp op, int p, int rank) {
  const DataType type = actual.type();
  const bool rounded_mean = op == ReduceOp::kMean && !helpers::is_integer_type(type) &&
                            !power_of_two(p) &&
                            std::getenv("COLLECTIVE_NCCL_RANKS_PER_NODE") == nullptr;
  if (!rounded_mean) {
    return helpers::check_elements(actual, 0, count, rank, [&](std::size_t i) {
      return helpers::expected_value(op, type, p, first + i);
    });
  }
  const double epsilon = type == DataType::kFloat16    ? 1.0 / 1024
                         : type == DataType::kBFloat16 ? 1.0 / 128
                         : type == DataType::kFloat32  ? 1.0 / (1 << 23)
                                                       : 1.0 / (1LL << 52);
  for (std::size_t i = 0; i < count; ++i) {
    double magnitude = 0;
    for (int r = 0; r < p; ++r) magnitude += std::abs(helpers::input_value(op, type, r, first + i));
    const double want = helpers::expected_value(op, type, p, first + i);
    const double got = actual.get(i);
    if (!(std::abs(got - want) <= (p + 2) * epsilon * magnitude)) {
      return ::testing::AssertionFailure()
             << "rank " << rank << " index " << first + i << ": expected " << want
             << " (ncclAvg rounding allowed), actual " << got;
    }
  }
  return ::testing::AssertionSuccess();
}

class GpuCollectives : public CudaDeviceTest {
 protected:
  void SetUp() override {
    CudaDeviceTest::SetUp();
    if (IsSkipped()) return;
    const NodeShare share = node_share();
    if (share.local_size > devices()) {
      GTEST_SKIP() << "GPU tests skipped: " << share.local_size << " ranks on this node but "
                   << devices() << " CUDA device(s); NCCL needs one device per rank";
    }
    CUDA_OK(cudaSetDevice(share.local_rank));
  }
};

TEST_F(GpuCollectives, AllReduceEveryTypeOpAndCount) {
  for (const DataType type : kTypes) {
    for (const ReduceOp op : kOps) {
      for (const std::size_t count : {0, 1, 7, 1000, 65537}) {
        for (const bool in_place : {false, true}) {
          const std::size_t bytes = count * element_size(type);
          DeviceBuffer send(bytes), recv(bytes);
          ASSERT_TRUE(send.ok() && recv.ok());
          (in_place ? recv : send).upload(inputs(op, type, world.rank(), count));
          AllReduceOptions options;
          options.op = op;
          world.all_reduce(in_place ? recv.get() : send.get(), recv.get(), count, type, options);
          // A count-0 call touches no buffer, so nothing is located and AUTO
          // judges it host memory (docs/gpu.md, "Device buffers").
          if (count > 0) {
            EXPECT_EQ(world.last_algorithm(), Algorithm::kNccl) << "count " << count;
          }
          ASSERT_TRUE(check_reduction(recv.download(type), 0, count, op, p, world.rank()))
              << "all_reduce " << to_string(type) << " " << to_string(op) << " count " << count
              << (in_place ? " in place" : "");
        }
      }
    }
  }
}

TEST_F(GpuCollectives, ReduceScatterEveryTypeAndOp) {
  for (const DataType type : kTypes) {
    for (const ReduceOp op : kOps) {
      for (const std::size_t block : {0, 1, 333}) {
        const std::size_t total = block * static_cast<std::size_t>(p);
        DeviceBuffer send(total * element_size(type)), recv(block * element_size(type));
        ASSERT_TRUE(send.ok() && recv.ok());
        send.upload(inputs(op, type, world.rank(), total));
        ReduceScatterOptions options;
        options.op = op;
        world.reduce_scatter(send.get(), recv.get(), block, type, options);
        const std::size_t first = block * static_cast<std::size_t>(world.rank());
        ASSERT_TRUE(check_reduction(recv.download(type), first, block, op, p, world.rank()))
            << "reduce_scatter " << to_string(type) << " " << to_string(op) << " block " << block;
      }
    }
  }
}

TEST_F(GpuCollectives, AllGatherBroadcastAndReduceEveryType) {
  for (const DataType type : kTypes) {
    const std::size_t element = element_size(type);
    for (const std::size_t count : {0, 1, 1001}) {
      const std::size_t total = count * static_cast<std::size_t>(p);
      {  // all_gather: block r holds rank r's input
        DeviceBuffer send(count * element), recv(total * element);
        ASSERT_TRUE(send.ok() && recv.ok());
        send.upload(inputs(ReduceOp::kSum, type, world.rank(), count));
        world.all_gather(send.get(), recv.get(), count, type);
        const auto result = recv.download(type);
        for (int owner = 0; owner < p; ++owner) {
          ASSERT_TRUE(helpers::check_elements(
              result, owner * count, count, world.rank(),
              [&](std::size_t i) { return helpers::input_value(ReduceOp::kSum, type, owner, i); }))
              << "all_gather " << to_string(type) << " block " << owner;
        }
      }
      for (const int root : {0, p - 1}) {
        {  // broadcast from root
          DeviceBuffer buffer(count * element);
          ASSERT_TRUE(buffer.ok());
          buffer.upload(inputs(ReduceOp::kSum, type, world.rank(), count));
          BroadcastOptions options;
          options.root = root;
          world.broadcast(buffer.get(), count, type, options);
          ASSERT_TRUE(helpers::check_elements(
              buffer.download(type), 0, count, world.rank(),
              [&](std::size_t i) { return helpers::input_value(ReduceOp::kSum, type, root, i); }))
              << "broadcast " << to_string(type) << " root " << root;
        }
        {  // reduce (SUM) to root; recv is null elsewhere
          DeviceBuffer send(count * element), recv(count * element);
          ASSERT_TRUE(send.ok() && recv.ok());
          send.upload(inputs(ReduceOp::kSum, type, world.rank(), count));
          ReduceOptions options;
          options.root = root;
          world.reduce(send.get(), world.rank() == root ? recv.get() : nullptr, count, type,
                       options);
          if (world.rank() == root) {
            ASSERT_TRUE(
                check_reduction(recv.download(type), 0, count, ReduceOp::kSum, p, world.rank()))
                << "reduce " << to_string(type) << " root " << root;
          }
        }
      }
    }
  }
}

TEST_F(GpuCollectives, AsyncCallsInFlightOnDeviceBuffersAreExact) {
  // Several calls in flight at once, run by the communicator's progress
  // thread (NCCL from another thread than the caller's, or the one-rank
  // device copy), waited in reverse order of issue.
  struct InFlight {
    DataType type;
    ReduceOp op;
    std::size_t count;
    std::unique_ptr<DeviceBuffer> send;
    std::unique_ptr<DeviceBuffer> recv;
    Work work;
  };
  std::vector<InFlight> calls;
  for (const DataType type :
       {DataType::kFloat32, DataType::kFloat64, DataType::kInt32, DataType::kBFloat16}) {
    for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      for (const std::size_t count : {std::size_t{1000}, std::size_t{65537}}) {
        InFlight call{type,
                      op,
                      count,
                      std::make_unique<DeviceBuffer>(count * element_size(type)),
                      std::make_unique<DeviceBuffer>(count * element_size(type)),
                      Work()};
        ASSERT_TRUE(call.send->ok() && call.recv->ok());
        call.send->upload(inputs(op, type, world.rank(), count));
        AllReduceOptions options;
        options.op = op;
        call.work =
            world.all_reduce_async(call.send->get(), call.recv->get(), count, type, options);
        calls.push_back(std::move(call));
      }
    }
  }
  const std::size_t gathered = 4099;
  DeviceBuffer gather_send(gathered * sizeof(float));
  DeviceBuffer gather_recv(gathered * sizeof(float) * static_cast<std::size_t>(p));
  ASSERT_TRUE(gather_send.ok() && gather_recv.ok());
  gather_send.upload(inputs(ReduceOp::kSum, DataType::kFloat32, world.rank(), gathered));
  Work gather =
      world.all_gather_async(gather_send.get(), gather_recv.get(), gathered, DataType::kFloat32);

  gather.wait();
  const auto all = gather_recv.download(DataType::kFloat32);
  for (int owner = 0; owner < p; ++owner) {
    ASSERT_TRUE(helpers::check_elements(all, owner * gathered, gathered, world.rank(),
                                        [&](std::size_t i) {
                                          return helpers::input_value(ReduceOp::kSum,
                                                                      DataType::kFloat32, owner, i);
                                        }))
        << "all_gather_async block " << owner;
  }
  for (auto call = calls.rbegin(); call != calls.rend(); ++call) {
    call->work.wait();
    EXPECT_TRUE(call->work.is_completed());
    ASSERT_TRUE(check_reduction(call->recv->download(call->type), 0, call->count, call->op, p,
                                world.rank()))
        << "all_reduce_async " << to_string(call->type) << " " << to_string(call->op) << " count "
        << call->count;
  }
}

TEST_F(GpuCollectives, PlansOnDeviceBuffersRepeatExactly) {
  // A plan resolves the memory kind and picks nccl once, at creation; each
  // start runs it again on whatever the buffers hold by then.
  const std::size_t count = 65537;
  DeviceBuffer send(count * sizeof(float));
  DeviceBuffer recv(count * sizeof(float));
  DeviceBuffer gathered(count * sizeof(float) * static_cast<std::size_t>(p));
  ASSERT_TRUE(send.ok() && recv.ok() && gathered.ok());
  AllReduceOptions sum;
  Plan reduce_plan = world.all_reduce_init(send.get(), recv.get(), count, DataType::kFloat32, sum);
  Plan gather_plan = world.all_gather_init(send.get(), gathered.get(), count, DataType::kFloat32);
  for (int start = 0; start < 3; ++start) {
    // Start s sends rank r's inputs as if it were rank r + s.
    const int as_rank = world.rank() + start;
    send.upload(inputs(ReduceOp::kSum, DataType::kFloat32, as_rank, count));
    reduce_plan.start().wait();
    const auto reduced = recv.download(DataType::kFloat32);
    ASSERT_TRUE(helpers::check_elements(reduced, 0, count, world.rank(),
                                        [&](std::size_t i) {
                                          double want = 0;
                                          for (int r = 0; r < p; ++r)
                                            want += helpers::input_value(
                                                ReduceOp::kSum, DataType::kFloat32, r + start, i);
                                          return want;
                                        }))
        << reduce_plan.describe() << ", start " << start;
    EXPECT_EQ(world.last_algorithm(), Algorithm::kNccl);
    gather_plan.start().wait();
    const auto all = gathered.download(DataType::kFloat32);
    for (int owner = 0; owner < p; ++owner) {
      ASSERT_TRUE(helpers::check_elements(
          all, owner * count, count, world.rank(),
          [&](std::size_t i) {
            return helpers::input_value(ReduceOp::kSum, DataType::kFloat32, owner + start, i);
          }))
          << gather_plan.describe() << ", start " << start << ", block " << owner;
    }
  }
}

TEST_F(GpuCollectives, HostAlgorithmsRefuseDeviceBuffersAndMixedBuffersAreRejected) {
  DeviceBuffer device(64 * sizeof(float));
  ASSERT_TRUE(device.ok());
  device.upload_zeros();
  for (const Algorithm host_algorithm : {Algorithm::kRing, Algorithm::kMpi}) {
    AllReduceOptions options;
    options.algorithm = host_algorithm;
    try {
      world.all_reduce(device.get(), device.get(), 64, DataType::kFloat32, options);
      ADD_FAILURE() << to_string(host_algorithm) << " accepted device buffers";
    } catch (const UnsupportedError& error) {
      EXPECT_NE(std::string(error.what()).find(to_string(host_algorithm)), std::string::npos)
          << error.what();
    }
  }
  std::vector<float> host(64, 1.0f);
  EXPECT_THROW(world.all_reduce(device.get(), host.data(), 64, DataType::kFloat32),
               InvalidArgumentError);
  AllReduceOptions declared_host;
  declared_host.memory = MemoryKind::kHost;
  EXPECT_THROW(world.all_reduce(device.get(), device.get(), 64, DataType::kFloat32, declared_host),
               InvalidArgumentError);
  // None of that poisoned the communicator: a declared-device call works.
  AllReduceOptions declared_device;
  declared_device.memory = MemoryKind::kDevice;
  declared_device.algorithm = Algorithm::kNccl;
  world.all_reduce(device.get(), device.get(), 64, DataType::kFloat32, declared_device);
  EXPECT_EQ(world.last_algorithm(), Algorithm::kNccl);
}

TEST_F(GpuCollectives, CallersCurrentDeviceIsKeptAndCommunicatorsAreIndependent) {
  int before = -1;
  CUDA_OK(cudaGetDevice(&before));
  Communicator other = world.split(0, world.rank());
  DeviceBuffer buffer(10 * sizeof(std::int32_t));
  ASSERT_TRUE(buffer.ok());
  for (Communicator* comm : {&world, &other, &world}) {
    buffer.upload(inputs(ReduceOp::kSum, DataType::kInt32, world.rank(), 10));
    comm->all_reduce(buffer.get(), buffer.get(), 10, DataType::kInt32);
    ASSERT_TRUE(
        check_reduction(buffer.download(DataType::kInt32), 0, 10, ReduceOp::kSum, p, world.rank()));
  }
  int after = -1;
  CUDA_OK(cudaGetDevice(&after));
  EXPECT_EQ(before, after);
}

TEST_F(GpuCollectives, MoreThanTwoToThe31Elements) {
  const std::size_t count = (std::size_t{1} << 31) + 17;
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
  int enough = free_bytes > count + (std::size_t{1} << 30) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &enough, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!enough || p > 2)
    GTEST_SKIP() << "needs 3 GiB free per GPU and at most 2 ranks (host memory)";
  DeviceBuffer buffer(count);
  ASSERT_TRUE(buffer.ok());
  std::vector<std::uint8_t> host(count);
  for (std::size_t i = 0; i < count; ++i)
    host[i] = static_cast<std::uint8_t>((i + world.rank()) % 7);
  CUDA_OK(cudaMemcpy(buffer.get(), host.data(), count, cudaMemcpyHostToDevice));
  world.all_reduce(buffer.get(), buffer.get(), count, DataType::kUInt8);
  CUDA_OK(cudaMemcpy(host.data(), buffer.get(), count, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < count; ++i) {
    unsigned want = 0;
    for (int r = 0; r < p; ++r) want += static_cast<unsigned>((i + r) % 7);
    ASSERT_EQ(host[i], want % 256) << "rank " << world.rank() << " index " << i;
  }
}

TEST_F(GpuCollectives, APeerThatNeverCallsTimesOutAndAbortsNccl) {
  if (p < 2) GTEST_SKIP() << "needs a peer";
  Communicator lonely = world.split(0, world.rank());
  DeviceBuffer buffer(1024 * sizeof(float));
  ASSERT_TRUE(buffer.ok());
  buffer.upload_zeros();
  lonely.all_reduce(buffer.get(), buffer.get(), 1024, DataType::kFloat32);  // NCCL is set up
  if (world.rank() == 0) {
    AllReduceOptions options;
    options.timeout = std::chrono::milliseconds(2000);
    try {
      lonely.all_reduce(buffer.get(), buffer.get(), 1024, DataType::kFloat32, options);
      ADD_FAILURE() << "an all_reduce without its peers returned";
    } catch (const TimeoutError& error) {
      EXPECT_NE(std::string(error.what()).find("ncclCommAbort"), std::string::npos) << error.what();
    }
    EXPECT_THROW(lonely.all_reduce(buffer.get(), buffer.get(), 1024, DataType::kFloat32),
                 CommunicationError);
  }
  world.barrier();
}

}  // namespace
