// The hierarchical variant's orchestration (algorithms/nccl_hierarchical.h)
// on host memory, where no GPU is needed: the steps NCCL does inside a node
// are done by the library's own collectives on a node communicator, and the
// ranks are grouped into simulated nodes of 1, 2 or all ranks. Every count,
// type and op, in place and out of place, every element checked against
// the closed form. On a GPU machine gpu_collectives_test runs the same
// orchestration on NCCL.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "algorithms/nccl/nccl_hierarchical.h"
#include "collective/collective.h"
#include "typed_buffer.h"

namespace {

using namespace collective;
using collective::internal::HierarchicalSteps;
using collective::internal::NodeLayout;
using collective::internal::Request;
namespace testing_helpers = collective::testing;

// Inside-node steps on a node communicator, cross-node steps on a
// communicator of one rank per node, all on host memory.
class HostSteps final : public HierarchicalSteps {
 public:
  HostSteps(Communicator& node, Communicator& across, DataType type)
      : node_(node), across_(across), type_(type) {}

  void local_reduce_scatter(const void* send, void* recv, std::size_t recv_count,
                            ReduceOp op) override {
    ReduceScatterOptions options;
    options.op = op;
    node_.reduce_scatter(send, recv, recv_count, type_, options);
  }
  void local_all_reduce(const void* send, void* recv, std::size_t count, ReduceOp op) override {
    AllReduceOptions options;
    options.op = op;
    node_.all_reduce(send, recv, count, type_, options);
  }
  void local_all_gather_in_place(void* recv, std::size_t block) override {
    auto* own = static_cast<std::byte*>(recv) +
                static_cast<std::size_t>(node_.rank()) * block * element_size(type_);
    node_.all_gather(own, recv, block, type_);
  }
  void copy_to_host(void* host, const void* local, std::size_t bytes) override {
    std::memcpy(host, local, bytes);
  }
  void copy_from_host(void* local, const void* host, std::size_t bytes) override {
    std::memcpy(local, host, bytes);
  }
  void wait(const char*) override { ++waits; }
  std::byte* staging(std::size_t bytes) override {
    staging_.assign(bytes + 1, std::byte{0x5a});
    staged_bytes = bytes;
    return staging_.data();
  }
  void cross_all_reduce(void* host, std::size_t count, DataType type, ReduceOp op) override {
    AllReduceOptions options;
    options.op = op;
    across_.all_reduce(host, host, count, type, options);
  }

  int waits = 0;
  std::size_t staged_bytes = 0;

 private:
  Communicator& node_;
  Communicator& across_;
  DataType type_;
  std::vector<std::byte> staging_;
};

struct SimulatedNodes {
  NodeLayout layout;
  Communicator node;
  Communicator across;
};

SimulatedNodes simulate(Communicator& world, int ranks_per_node) {
  std::vector<std::string> hosts;
  for (int r = 0; r < world.size(); ++r)
    hosts.push_back("node" + std::to_string(r / ranks_per_node));
  NodeLayout layout = internal::node_layout_from_hosts(hosts, world.rank());
  Communicator node = world.split(layout.node_index, world.rank());
  Communicator across = world.split(layout.local_rank, world.rank());
  return SimulatedNodes{layout, std::move(node), std::move(across)};
}

class HierarchicalOnHost : public ::testing::TestWithParam<int> {};

TEST_P(HierarchicalOnHost, EveryCountTypeAndOpIsExact) {
  Communicator world = Communicator::world();
  const int p = world.size();
  const int per_node = GetParam() == 0 ? p : GetParam();
  if (p % per_node != 0) GTEST_SKIP() << p << " ranks do not form nodes of " << per_node;
  SimulatedNodes nodes = simulate(world, per_node);
  ASSERT_EQ(nodes.layout.node_count, p / per_node);
  ASSERT_EQ(nodes.node.size(), per_node);
  ASSERT_EQ(nodes.across.size(), p / per_node);

  const DataType types[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64, DataType::kInt8,     DataType::kUInt8,
                            DataType::kInt32,   DataType::kInt64};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                          ReduceOp::kProd};
  const std::size_t counts[] = {0, 1, 3, 7, 100, 1001};
  for (const DataType type : types) {
    for (const ReduceOp op : ops) {
      for (const std::size_t count : counts) {
        for (const bool in_place : {false, true}) {
          const std::size_t element = element_size(type);
          testing_helpers::TypedBuffer send(type, count), recv(type, count);
          recv.poison();
          for (std::size_t i = 0; i < count; ++i) {
            (in_place ? recv : send)
                .set(i, testing_helpers::input_value(op, type, world.rank(), i));
          }
          Request request;
          request.kind = CollectiveKind::kAllReduce;
          request.send = in_place ? recv.data() : send.data();
          request.recv = recv.data();
          request.count = count;
          request.type = type;
          request.op = op;
          HostSteps steps(nodes.node, nodes.across, type);
          internal::run_hierarchical_all_reduce(request, nodes.layout, steps);

          const auto shape = internal::hierarchical_shape(count, per_node, nodes.layout.local_rank);
          // 16-bit SUM, MEAN, PROD stage a float32 copy ahead of the shard.
          const bool wide =
              (type == DataType::kFloat16 || type == DataType::kBFloat16) &&
              (op == ReduceOp::kSum || op == ReduceOp::kMean || op == ReduceOp::kProd);
          ASSERT_EQ(steps.staged_bytes,
                    (shape.block + shape.tail) * (element + (wide ? sizeof(float) : 0)));
          ASSERT_EQ(steps.waits, 2);
          ASSERT_TRUE(testing_helpers::check_elements(
              recv, 0, count, world.rank(),
              [&](std::size_t i) { return testing_helpers::expected_value(op, type, p, i); }))
              << per_node << " ranks per node, " << to_string(type) << " " << to_string(op)
              << " count " << count << (in_place ? " in place" : "");
        }
      }
    }
  }
}

// The host step across nodes keeps 16-bit partials in float32 and divides
// MEAN before its one rounding: with one rank per node it is the whole
// reduction, so float16 40000 on every rank has the MEAN 40000 (it was inf:
// the 16-bit sum overflowed before the division), +-60000 the exact SUM,
// and 256 and ones in bfloat16 the sum rounded once. (With several ranks
// per node, the node's partial is NCCL's 16-bit reduce-scatter.)
TEST(HierarchicalOnHostLimits, OneRankPerNodeRoundsOnceAtTheEnd) {
  Communicator world = Communicator::world();
  const int p = world.size();
  SimulatedNodes nodes = simulate(world, 1);
  struct Case {
    DataType type;
    ReduceOp op;
    double (*value)(int rank, std::size_t i);
  };
  const Case cases[] = {
      {DataType::kFloat16, ReduceOp::kMean, [](int, std::size_t) { return 40000.0; }},
      {DataType::kFloat16, ReduceOp::kSum,
       [](int r, std::size_t i) {
         return (static_cast<std::size_t>(r) + i) % 2 ? -60000.0 : 60000.0;
       }},
      {DataType::kBFloat16, ReduceOp::kSum,
       [](int r, std::size_t i) { return static_cast<std::size_t>(r) == i % 4 ? 256.0 : 1.0; }},
  };
  for (const Case& c : cases) {
    const std::size_t count = 101;
    testing_helpers::TypedBuffer send(c.type, count), recv(c.type, count);
    recv.poison();
    for (std::size_t i = 0; i < count; ++i) send.set(i, c.value(world.rank(), i));
    Request request;
    request.kind = CollectiveKind::kAllReduce;
    request.send = send.data();
    request.recv = recv.data();
    request.count = count;
    request.type = c.type;
    request.op = c.op;
    HostSteps steps(nodes.node, nodes.across, c.type);
    internal::run_hierarchical_all_reduce(request, nodes.layout, steps);
    for (std::size_t i = 0; i < count; ++i) {
      double exact = 0;
      for (int r = 0; r < p; ++r) exact += c.value(r, i);
      float value = static_cast<float>(exact);
      if (c.op == ReduceOp::kMean) value /= static_cast<float>(p);
      testing_helpers::TypedBuffer one(c.type, 1);
      one.set(0, value);
      ASSERT_EQ(recv.get(i), one.get(0))
          << to_string(c.type) << " " << to_string(c.op) << ": rank " << world.rank() << " index "
          << i << " expected " << one.get(0) << " actual " << recv.get(i);
    }
  }
}

// 1: one rank per node; 2: pairs; 0: one node of all ranks.
INSTANTIATE_TEST_SUITE_P(RanksPerNode, HierarchicalOnHost, ::testing::Values(1, 2, 0),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 0 ? std::string("AllInOneNode")
                                                  : std::to_string(info.param) + "PerNode";
                         });

}  // namespace
