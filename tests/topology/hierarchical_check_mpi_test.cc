// hierarchical all_reduce across (virtual) nodes makes the cross-rank check
// without a round of its own (cross_rank_check/two_stage_check.h): a node's ranks
// hear each other first, reduce into scratch, and the check finishes with
// the first message that leaves the node. These tests hold it to what the
// check promises everywhere else: ranks whose calls differ, inside a node or
// between nodes, or that reject their arguments, all raise on every rank,
// nothing of the caller's is written, and the communicator stays usable.
// Every multi-node layout of 2-4 ranks, equal and unequal.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "expect_error.h"
#include "virtual_nodes.h"

namespace collective {
namespace {

using testing::expect_raises;

AllReduceOptions hierarchical(ReduceOp op = ReduceOp::kSum) {
  AllReduceOptions options;
  options.algorithm = Algorithm::kHierarchical;
  options.op = op;
  return options;
}

float input(int rank, std::size_t i) { return static_cast<float>((rank + 1) * (i % 9 + 1)); }
float sum(int size, std::size_t i) {
  return static_cast<float>(size * (size + 1) / 2 * (i % 9 + 1));
}

// One hierarchical all_reduce of `count`, every element checked.
void expect_exact(Communicator& comm, std::size_t count, bool in_place) {
  std::vector<float> in(count), out(count, -7.0f);
  for (std::size_t i = 0; i < count; ++i) in[i] = input(comm.rank(), i);
  float* destination = in_place ? in.data() : out.data();
  comm.all_reduce(in.data(), destination, count, DataType::kFloat32, hierarchical());
  ASSERT_EQ(comm.last_algorithm(), Algorithm::kHierarchical);
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_EQ(destination[i], sum(comm.size(), i))
        << "rank " << comm.rank() << " index " << i << " count " << count
        << (in_place ? " in place" : "");
  }
}

void expect_untouched(const std::vector<float>& buffer, float value, int rank, const char* what) {
  for (std::size_t i = 0; i < buffer.size(); ++i) {
    ASSERT_EQ(buffer[i], value) << "rank " << rank << " index " << i << ": the " << what
                                << " was written";
  }
}

class HierarchicalCheck : public ::testing::Test {
 protected:
  // Runs `body` on a communicator of every layout with several nodes, after
  // a first call that sets up the node segment (that call checks first).
  template <typename Body>
  void for_each_layout(Body&& body) {
    const int ranks = Communicator::world().size();
    if (ranks < 2) GTEST_SKIP() << "needs two ranks";
    for (const std::vector<int>& layout : testing_support::node_layouts(ranks)) {
      if (layout.size() < 2) continue;
      Communicator comm = testing_support::with_virtual_nodes(layout);
      expect_exact(comm, 5, false);
      body(comm, layout);
      expect_exact(comm, 4099, true);  // still usable, every segment in step
      if (HasFailure()) {
        ADD_FAILURE() << "layout of " << layout.size() << " nodes, first node " << layout.front()
                      << " ranks";
        return;
      }
    }
  }
};

TEST_F(HierarchicalCheck, CarriedCheckIsExact) {
  // No data, regions shorter than a 64-byte unit, a ring head that is the
  // whole first segment, heads shorter than it, and a region beyond the
  // scratch limit, whose check is a round of its own (16 MiB an owner).
  for_each_layout([](Communicator& comm, const std::vector<int>& layout) {
    int owners = layout.front();
    for (int ranks : layout) owners = std::min(owners, ranks);
    const std::size_t beyond_scratch = (std::size_t{16} << 20) / 4 * owners + 17;
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7},
                                    std::size_t{4099}, std::size_t{300001}, beyond_scratch}) {
      expect_exact(comm, count, false);
      expect_exact(comm, count, true);
    }
  });
}

TEST_F(HierarchicalCheck, NodesThatDifferAllRaise) {
  // The first node's ranks agree with each other, the rest with each other:
  // every node runs its node step, and the check across nodes catches it.
  for_each_layout([](Communicator& comm, const std::vector<int>& layout) {
    const int rank = comm.rank();
    const bool first_node = rank < layout.front();
    const std::size_t count = first_node ? 4099 : 4100;
    std::vector<float> in(count, 1.0f), out(count, -7.0f);
    expect_raises<MismatchError>(
        [&] { comm.all_reduce(in.data(), out.data(), count, DataType::kFloat32, hierarchical()); },
        {"all_reduce #", "count=4099", "count=4100"}, rank);
    expect_untouched(out, -7.0f, rank, "output");
    expect_untouched(in, 1.0f, rank, "input");
    // The ops differ, in place, with a region above the ring's first head.
    std::vector<float> data(300001, 2.0f);
    const ReduceOp op = first_node ? ReduceOp::kSum : ReduceOp::kMax;
    expect_raises<MismatchError>(
        [&] {
          comm.all_reduce(data.data(), data.data(), data.size(), DataType::kFloat32,
                          hierarchical(op));
        },
        {"op=sum", "op=max"}, rank);
    expect_untouched(data, 2.0f, rank, "buffer");
  });
}

TEST_F(HierarchicalCheck, RanksOfOneNodeThatDifferAllRaise) {
  // Rank 0 differs from the other ranks of its node (layouts whose first
  // node has one rank: from every other rank): its node skips the node
  // step, the other nodes run theirs, and every rank raises.
  for_each_layout([](Communicator& comm, const std::vector<int>&) {
    const int rank = comm.rank();
    const std::size_t count = rank == 0 ? 65 : 64;
    std::vector<float> in(count, 1.0f), out(count, -7.0f);
    expect_raises<MismatchError>(
        [&] { comm.all_reduce(in.data(), out.data(), count, DataType::kFloat32, hierarchical()); },
        {"all_reduce #", "rank 0 count=65", "count=64"}, rank);
    expect_untouched(out, -7.0f, rank, "output");
  });
}

TEST_F(HierarchicalCheck, AnotherAlgorithmOrCollectiveOnOneRank) {
  // The last rank runs the ring (which carries the check its own way) or
  // all_gather (which checks first) where the others run hierarchical.
  for_each_layout([](Communicator& comm, const std::vector<int>&) {
    const int rank = comm.rank();
    const int last = comm.size() - 1;
    std::vector<float> in(4096, 1.0f), out(4096 * static_cast<std::size_t>(comm.size()), -7.0f);
    AllReduceOptions options = hierarchical();
    if (rank == last) options.algorithm = Algorithm::kRing;
    expect_raises<MismatchError>(
        [&] { comm.all_reduce(in.data(), out.data(), in.size(), DataType::kFloat32, options); },
        {"algorithm=hierarchical", "algorithm=ring"}, rank);
    expect_untouched(out, -7.0f, rank, "output");
    auto call = [&] {
      if (rank == last) {
        comm.all_gather(in.data(), out.data(), in.size(), DataType::kFloat32);
      } else {
        comm.all_reduce(in.data(), out.data(), in.size(), DataType::kFloat32, hierarchical());
      }
    };
    expect_raises<MismatchError>(call, {"all_reduce", "all_gather"}, rank);
    expect_untouched(out, -7.0f, rank, "output");
  });
}

TEST_F(HierarchicalCheck, OneRankRejectingItsArgumentsIsNamedEverywhere) {
  for_each_layout([](Communicator& comm, const std::vector<int>&) {
    const int rank = comm.rank();
    const int last = comm.size() - 1;
    std::vector<float> in(1000, 1.0f), out(1000, -7.0f);
    const float* send = rank == last ? nullptr : in.data();
    expect_raises<InvalidArgumentError>(
        [&] { comm.all_reduce(send, out.data(), in.size(), DataType::kFloat32, hierarchical()); },
        {"all_reduce #", rank == last ? "send buffer is null" : "rank " + std::to_string(last)},
        rank);
    expect_untouched(out, -7.0f, rank, "output");
  });
}

}  // namespace
}  // namespace collective
