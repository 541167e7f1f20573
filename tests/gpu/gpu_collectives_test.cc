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
#include <sstream>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "gpu/device_runtime.h"
#include "typed_values.h"

namespace {

using namespace collective;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(call)

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
  void upload(const std::vector<std::byte>& host) const {
    if (!host.empty()) cudaMemcpy(data_, host.data(), host.size(), cudaMemcpyHostToDevice);
  }
  std::vector<std::byte> download() const {
    std::vector<std::byte> host(bytes_);
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

NodeShare node_share() {
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

const DataType kTypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                           DataType::kFloat64, DataType::kInt8,     DataType::kUInt8,
                           DataType::kInt32,   DataType::kInt64};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                         ReduceOp::kProd};
const std::size_t kCounts[] = {0, 1, 7, 1000, 65537};

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// ncclAvg on floating types sums inputs pre-multiplied by 1/p, which is
// exact only when p is a power of two; otherwise allow the rounding of p
// products and one sum in the type's precision. Everything else is exact.
double tolerance(ReduceOp op, DataType type, int p, double expected) {
  if (op != ReduceOp::kMean || test::is_integer(type) || power_of_two(p)) return 0;
  if (std::getenv("COLLECTIVE_NCCL_RANKS_PER_NODE") != nullptr) return 0;  // host division
  const double epsilon = type == DataType::kFloat16    ? 1.0 / 1024
                         : type == DataType::kBFloat16 ? 1.0 / 128
                         : type == DataType::kFloat32  ? 1.0 / (1 << 23)
                                                       : 1.0 / (1LL << 52);
  return 2.0 * (p + 1) * epsilon * std::abs(expected);
}

class GpuCollectives : public testing::Test {
 protected:
  void SetUp() override {
    const auto& devices = internal::gpu::device_count();
    if (devices.count == 0) {
      GTEST_SKIP() << "GPU tests skipped: CUDA finds no device (" << devices.reason << ")";
    }
    const NodeShare share = node_share();
    if (share.local_size > devices.count) {
      GTEST_SKIP() << "GPU tests skipped: " << share.local_size << " ranks on this node but "
                   << devices.count << " CUDA device(s); NCCL needs one device per rank";
    }
    CUDA_OK(cudaSetDevice(share.local_rank));
  }

  Communicator world = Communicator::world();
  int p = world.size();
};

TEST_F(GpuCollectives, AllReduceEveryTypeOpAndCount) {
  for (const DataType type : kTypes) {
    for (const ReduceOp op : kOps) {
      for (const std::size_t count : kCounts) {
        for (const bool in_place : {false, true}) {
          const std::size_t bytes = count * element_size(type);
          DeviceBuffer send(bytes), recv(bytes);
          ASSERT_TRUE(send.ok() && recv.ok());
          const auto input = test::filled(op, world.rank(), count, type);
          (in_place ? recv : send).upload(input);
          AllReduceOptions options;
          options.op = op;
          world.all_reduce(in_place ? recv.get() : send.get(), recv.get(), count, type, options);
          EXPECT_EQ(world.last_algorithm(), Algorithm::kNccl);
          const int ranks = p;
          std::ostringstream what;
          what << "all_reduce " << to_string(type) << " " << to_string(op) << " count " << count
               << (in_place ? " in place" : "");
          const auto result = recv.download();
          std::size_t failures = 0;
          std::ostringstream wrong;
          for (std::size_t i = 0; i < count; ++i) {
            const double want = test::expected_value(op, ranks, i, type);
            const double got = test::load(result.data(), i, type);
            if (std::abs(got - want) > tolerance(op, type, ranks, want) || std::isnan(got)) {
              if (failures++ < 5) wrong << " [index " << i << ": expected " << want << ", got " << got << "]";
            }
          }
          ASSERT_EQ(failures, 0u) << "rank " << world.rank() << ", " << what.str() << ": "
                                  << failures << " wrong elements" << wrong.str();
        }
      }
    }
  }
}

TEST_F(GpuCollectives, ReduceScatterEveryTypeAndOp) {
  for (const DataType type : kTypes) {
    for (const ReduceOp op : kOps) {
      for (const std::size_t block : {std::size_t{0}, std::size_t{1}, std::size_t{333}}) {
        const std::size_t element = element_size(type);
        const std::size_t total = block * static_cast<std::size_t>(p);
        DeviceBuffer send(total * element), recv(block * element);
        ASSERT_TRUE(send.ok() && recv.ok());
        send.upload(test::filled(op, world.rank(), total, type));
        ReduceScatterOptions options;
        options.op = op;
        world.reduce_scatter(send.get(), recv.get(), block, type, options);
        const auto result = recv.download();
        const std::size_t first = block * static_cast<std::size_t>(world.rank());
        std::size_t failures = 0;
        for (std::size_t i = 0; i < block; ++i) {
          const double want = test::expected_value(op, p, first + i, type);
          const double got = test::load(result.data(), i, type);
          if (std::abs(got - want) > tolerance(op, type, p, want) || std::isnan(got)) {
            ADD_FAILURE() << "rank " << world.rank() << " reduce_scatter " << to_string(type) << " "
                          << to_string(op) << " index " << first + i << ": expected " << want
                          << ", got " << got;
            if (++failures == 5) break;
          }
        }
        ASSERT_EQ(failures, 0u);
      }
    }
  }
}

TEST_F(GpuCollectives, AllGatherBroadcastAndReduceEveryType) {
  for (const DataType type : kTypes) {
    const std::size_t element = element_size(type);
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1001}}) {
      const std::size_t total = count * static_cast<std::size_t>(p);
      {  // all_gather: block r holds rank r's input
        DeviceBuffer send(count * element), recv(total * element);
        ASSERT_TRUE(send.ok() && recv.ok());
        send.upload(test::filled(ReduceOp::kSum, world.rank(), count, type));
        world.all_gather(send.get(), recv.get(), count, type);
        const auto result = recv.download();
        for (std::size_t j = 0; j < total; ++j) {
          const int owner = static_cast<int>(j / (count == 0 ? 1 : count));
          const double want = test::input_value(ReduceOp::kSum, owner, j % (count == 0 ? 1 : count));
          ASSERT_EQ(test::load(result.data(), j, type), want)
              << "rank " << world.rank() << " all_gather " << to_string(type) << " index " << j;
        }
      }
      for (const int root : {0, p - 1}) {
        {  // broadcast from root
          DeviceBuffer buffer(count * element);
          ASSERT_TRUE(buffer.ok());
          buffer.upload(test::filled(ReduceOp::kSum, world.rank(), count, type));
          BroadcastOptions options;
          options.root = root;
          world.broadcast(buffer.get(), count, type, options);
          const auto result = buffer.download();
          for (std::size_t i = 0; i < count; ++i) {
            ASSERT_EQ(test::load(result.data(), i, type), test::input_value(ReduceOp::kSum, root, i))
                << "rank " << world.rank() << " broadcast root " << root << " " << to_string(type)
                << " index " << i;
          }
        }
        {  // reduce (SUM) to root; recv is null elsewhere
          DeviceBuffer send(count * element), recv(count * element);
          ASSERT_TRUE(send.ok() && recv.ok());
          send.upload(test::filled(ReduceOp::kSum, world.rank(), count, type));
          ReduceOptions options;
          options.root = root;
          world.reduce(send.get(), world.rank() == root ? recv.get() : nullptr, count, type, options);
          if (world.rank() == root) {
            const auto result = recv.download();
            for (std::size_t i = 0; i < count; ++i) {
              ASSERT_EQ(test::load(result.data(), i, type),
                        test::expected_value(ReduceOp::kSum, p, i, type))
                  << "rank " << world.rank() << " reduce root " << root << " " << to_string(type)
                  << " index " << i;
            }
          }
        }
      }
    }
  }
}

TEST_F(GpuCollectives, HostAlgorithmsRefuseDeviceBuffersAndMixedBuffersAreRejected) {
  DeviceBuffer device(64 * sizeof(float));
  ASSERT_TRUE(device.ok());
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
  device.upload(std::vector<std::byte>(64 * sizeof(float)));
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
    buffer.upload(test::filled(ReduceOp::kSum, world.rank(), 10, DataType::kInt32));
    comm->all_reduce(buffer.get(), buffer.get(), 10, DataType::kInt32);
    const auto result = buffer.download();
    for (std::size_t i = 0; i < 10; ++i) {
      ASSERT_EQ(test::load(result.data(), i, DataType::kInt32),
                test::expected_value(ReduceOp::kSum, p, i, DataType::kInt32))
          << "rank " << world.rank() << " index " << i;
    }
  }
  int after = -1;
  CUDA_OK(cudaGetDevice(&after));
  EXPECT_EQ(before, after);
}

TEST_F(GpuCollectives, MoreThanTwoToThe31Elements) {
  const std::size_t count = (std::size_t{1} << 31) + 17;
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
  int enough = free_bytes > count + (std::size_t{1} << 30) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &enough, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!enough || p > 2) GTEST_SKIP() << "needs 2 GiB free per GPU and at most 2 ranks (host memory)";
  DeviceBuffer buffer(count);
  ASSERT_TRUE(buffer.ok());
  std::vector<std::byte> host(count);
  for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<std::byte>((i + world.rank()) % 7);
  buffer.upload(host);
  world.all_reduce(buffer.get(), buffer.get(), count, DataType::kUInt8);
  host = buffer.download();
  for (std::size_t i = 0; i < count; ++i) {
    unsigned want = 0;
    for (int r = 0; r < p; ++r) want += static_cast<unsigned>((i + r) % 7);
    ASSERT_EQ(static_cast<unsigned>(host[i]), want % 256) << "rank " << world.rank() << " index " << i;
  }
}

TEST_F(GpuCollectives, APeerThatNeverCallsTimesOutAndAbortsNccl) {
  if (p < 2) GTEST_SKIP() << "needs a peer";
  Communicator lonely = world.split(0, world.rank());
  DeviceBuffer buffer(1024 * sizeof(float));
  ASSERT_TRUE(buffer.ok());
  buffer.upload(std::vector<std::byte>(1024 * sizeof(float)));
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
