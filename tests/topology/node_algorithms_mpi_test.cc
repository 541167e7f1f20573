// shared_memory and hierarchical all-reduce under mpirun (1-4 ranks), and
// shared_memory's gathers and scatters by AUTO with virtual nodes: every
// type and op at counts around every boundary (64-byte units, pieces,
// slots, the small/large switch), in place and not, from library-allocated
// buffers, with virtual nodes of equal and unequal sizes, bitwise agreement
// between ranks, and a bounded wait that names the missing rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "transport/shm/shared_object_owner.h"
#include "collective/collective.h"
#include "exact_inputs.h"
#include "virtual_nodes.h"

namespace collective {
namespace {

using testing_support::check_result;
using testing_support::fill_inputs;
using testing_support::kAllOps;
using testing_support::kAllTypes;

// Around 64-byte units, one 4 KiB slot (the small-slot registration), the
// 16 KiB small/large switch, and several 256 KiB slots.
const std::size_t kCounts[] = {0, 1, 2, 3, 15, 16, 17, 63, 64, 65, 1000, 1025, 4099, 16385, 70001};
const std::size_t kLargeCount = (std::size_t{1} << 20) + 13;

bool all_ranks_agree(bool ok) {
  int value = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return value == 1;
}

std::string label(Algorithm algorithm, std::size_t count, bool in_place) {
  return std::string(to_string(algorithm)) + " count " + std::to_string(count) +
         (in_place ? " in place" : "");
}

void run_exact(Communicator& comm, Algorithm algorithm, DataType type, ReduceOp op,
               std::size_t count, bool in_place) {
  const std::size_t bytes = count * element_size(type);
  std::vector<std::byte> send(bytes + 1);
  std::vector<std::byte> recv(bytes + 1);
  fill_inputs(send.data(), count, type, op, comm.rank());
  std::memset(recv.data(), 0x5a, recv.size());
  if (in_place) std::memcpy(recv.data(), send.data(), bytes);
  AllReduceOptions options;
  options.algorithm = algorithm;
  options.op = op;
  comm.all_reduce(in_place ? recv.data() : send.data(), recv.data(), count, type, options);
  EXPECT_EQ(comm.last_algorithm(), algorithm);
  check_result(recv.data(), count, type, op, comm.size(), comm.rank(),
               label(algorithm, count, in_place));
  EXPECT_EQ(recv[bytes], std::byte{0x5a}) << "wrote past the end";
}

TEST(SharedMemory, EveryTypeOpAndCount) {
  Communicator world = Communicator::world();
  for (const DataType type : kAllTypes) {
    for (const ReduceOp op : kAllOps) {
      if (!op_applies_to(op, type)) continue;
      for (const std::size_t count : kCounts) {
        run_exact(world, Algorithm::kSharedMemory, type, op, count, false);
      }
    }
  }
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

TEST(SharedMemory, InPlaceAndManyRounds) {
  Communicator world = Communicator::world();
  for (const DataType type : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64}) {
    for (const std::size_t count : {std::size_t{17}, std::size_t{70001}, kLargeCount}) {
      run_exact(world, Algorithm::kSharedMemory, type, ReduceOp::kSum, count, true);
      run_exact(world, Algorithm::kSharedMemory, type, ReduceOp::kMean, count, false);
    }
  }
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

TEST(SharedMemory, FromAllocatedBuffers) {
  Communicator world = Communicator::world();
  for (const std::size_t count : {std::size_t{5}, std::size_t{70001}, kLargeCount}) {
    const std::size_t bytes = count * sizeof(float);
    auto* send = static_cast<float*>(world.allocate(bytes));
    auto* recv = static_cast<float*>(world.allocate(bytes));
    ASSERT_NE(send, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(send) % 64, 0u);
    AllReduceOptions options;
    options.algorithm = Algorithm::kSharedMemory;
    for (int repeat = 0; repeat < 3; ++repeat) {
      fill_inputs(send, count, DataType::kFloat32, ReduceOp::kSum, world.rank());
      world.all_reduce(send, recv, count, DataType::kFloat32, options);
      check_result(recv, count, DataType::kFloat32, ReduceOp::kSum, world.size(), world.rank(),
                   "allocated send, count " + std::to_string(count));
      fill_inputs(recv, count, DataType::kFloat32, ReduceOp::kSum, world.rank());
      world.all_reduce(recv, recv, count, DataType::kFloat32, options);
      check_result(recv, count, DataType::kFloat32, ReduceOp::kSum, world.size(), world.rank(),
                   "allocated in place, count " + std::to_string(count));
    }
    // Only part of an allocation, at an odd offset.
    fill_inputs(send + 3, count - 3, DataType::kFloat32, ReduceOp::kMax, world.rank());
    options.op = ReduceOp::kMax;
    world.all_reduce(send + 3, recv, count - 3, DataType::kFloat32, options);
    check_result(recv, count - 3, DataType::kFloat32, ReduceOp::kMax, world.size(), world.rank(),
                 "allocated at an offset");
    world.deallocate(send);
    world.deallocate(recv);
  }
  EXPECT_EQ(world.allocate(0), nullptr);
  world.deallocate(nullptr);
  int local = 0;
  EXPECT_THROW(world.deallocate(&local), InvalidArgumentError);
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

// Calls of every form one after another on one segment: small and large,
// in place and not, shared-memory and hierarchical phases, with data that
// changes every call, so a slot reused too early shows as stale values.
TEST(SharedMemory, MixedCallsReuseSlotsSafely) {
  Communicator world = Communicator::world();
  const std::size_t counts[] = {3, 4100, 70001, 300007, 17};
  const Algorithm algorithms[] = {Algorithm::kSharedMemory, Algorithm::kHierarchical};
  std::vector<float> send(300007);
  std::vector<float> recv(300007);
  for (std::size_t call = 0; call < 60; ++call) {
    const std::size_t count = counts[call % 5];
    const Algorithm algorithm = algorithms[(call / 5) % 2];
    const bool in_place = call % 3 == 0;
    const ReduceOp op = call % 2 ? ReduceOp::kSum : ReduceOp::kMax;
    fill_inputs(send.data(), count, DataType::kFloat32, op, world.rank(), call * 7919);
    if (in_place) std::copy(send.begin(), send.begin() + static_cast<long>(count), recv.begin());
    AllReduceOptions options;
    options.algorithm = algorithm;
    options.op = op;
    world.all_reduce(in_place ? recv.data() : send.data(), recv.data(), count, DataType::kFloat32,
                     options);
    // No early exit: every rank must make every call.
    check_result(recv.data(), count, DataType::kFloat32, op, world.size(), world.rank(),
                 "call " + std::to_string(call) + " " + label(algorithm, count, in_place),
                 call * 7919);
  }
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

// `count` floats in [-1, 1), different on every rank: their sum depends on
// the order of the additions.
std::vector<float> random_floats(std::size_t count, unsigned seed, int rank) {
  std::mt19937 random(seed + static_cast<unsigned>(rank));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& x : values) x = value(random);
  return values;
}

// Random floats: the sum depends on the order, which is fixed, so every
// rank holds the same bits, and so does a second run.
TEST(SharedMemory, BitwiseIdenticalOnEveryRankAndRun) {
  Communicator world = Communicator::world();
  for (const Algorithm algorithm : {Algorithm::kSharedMemory, Algorithm::kHierarchical}) {
    for (const std::size_t count : {std::size_t{1000}, std::size_t{300000}}) {
      const std::vector<float> input = random_floats(count, 77, world.rank());
      std::vector<float> first(count);
      std::vector<float> second(count);
      AllReduceOptions options;
      options.algorithm = algorithm;
      world.all_reduce(input.data(), first.data(), count, DataType::kFloat32, options);
      world.all_reduce(input.data(), second.data(), count, DataType::kFloat32, options);
      EXPECT_EQ(std::memcmp(first.data(), second.data(), count * sizeof(float)), 0)
          << to_string(algorithm) << ": two runs differ on rank " << world.rank();
      std::vector<float> rank0 = first;
      MPI_Bcast(rank0.data(), static_cast<int>(count), MPI_FLOAT, 0, MPI_COMM_WORLD);
      EXPECT_EQ(std::memcmp(first.data(), rank0.data(), count * sizeof(float)), 0)
          << to_string(algorithm) << ": rank " << world.rank() << " differs from rank 0";
    }
  }
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

// A new communicator's handoff tuner tries the other way on the third call
// of its first size (transport/shm/two_way_tuner.h): with
// COLLECTIVE_SHM_HANDOFF unset, eight calls of one size on a new
// communicator run both ways, in both forms (one-step and split), and must
// all give the first call's bits. (With the way forced, as in the
// small-slot runs, they all take that way.)
TEST(SharedMemory, BitwiseIdenticalWhicheverWayTheSlotsAreHandedOver) {
  for (const std::size_t count : {std::size_t{3000}, std::size_t{200000}, std::size_t{700001}}) {
    Communicator world = Communicator::world();
    const std::vector<float> input = random_floats(count, 5, world.rank());
    std::vector<float> first(count);
    std::vector<float> again(count);
    AllReduceOptions options;
    options.algorithm = Algorithm::kSharedMemory;
    world.all_reduce(input.data(), first.data(), count, DataType::kFloat32, options);
    for (int call = 1; call < 8; ++call) {
      world.all_reduce(input.data(), again.data(), count, DataType::kFloat32, options);
      EXPECT_EQ(std::memcmp(first.data(), again.data(), count * sizeof(float)), 0)
          << "count " << count << ": call " << call << " differs from call 0 on rank "
          << world.rank();
    }
  }
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

TEST(SharedMemory, TimeoutNamesTheMissingRank) {
  Communicator world = Communicator::world();
  if (world.size() < 2) GTEST_SKIP() << "needs two ranks";
  Communicator comm = world.split(0, world.rank());
  AllReduceOptions options;
  options.algorithm = Algorithm::kSharedMemory;
  float value = 1.0f;
  // Makes the segment, under the test's timeout: a rank late to it on a
  // loaded machine is waited for. Only the call that must time out gets
  // the short one.
  comm.all_reduce(&value, &value, 1, DataType::kFloat32, options);
  options.timeout = std::chrono::milliseconds(500);
  const int missing = comm.size() - 1;
  if (comm.rank() != missing) {
    try {
      comm.all_reduce(&value, &value, 1, DataType::kFloat32, options);
      ADD_FAILURE() << "rank " << comm.rank() << ": no timeout while rank " << missing
                    << " was away";
    } catch (const TimeoutError& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find("rank " + std::to_string(missing)), std::string::npos) << what;
      EXPECT_NE(what.find("timed out"), std::string::npos) << what;
    }
    // The communicator is poisoned from now on.
    EXPECT_THROW(comm.all_reduce(&value, &value, 1, DataType::kFloat32, options),
                 CommunicationError);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

// A process that died during a segment's setup, or with allocations
// alive, leaves its shared-memory names behind; a later process that gets
// the same pid must not fail on them. Stale objects for the next names this
// process could use are made first, then the library must still work.
TEST(SharedMemory, StaleNamesOfADeadProcessWithTheSamePidAreReplaced) {
  Communicator world = Communicator::world();
  if (world.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  // Names carry the pid and start time of their process
  // (algorithms/shared_object_owner.h): these stand for a dead process that
  // had both.
  const std::string owner = internal::owner_tag();
  constexpr int kNames = 256;  // more than this process makes before here
  std::vector<std::string> stale;
  for (int i = 0; i < kNames; ++i) {
    for (const char* prefix : {"/collective-seg-", "/collective-mem-"}) {
      const std::string name = prefix + owner + "-" + std::to_string(i);
      const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd >= 0) {  // taken names belong to this process's live objects
        close(fd);
        stale.push_back(name);
      }
    }
  }
  ASSERT_GT(stale.size(), std::size_t{kNames}) << "rank " << world.rank();
  MPI_Barrier(MPI_COMM_WORLD);
  {
    // A new communicator makes a new segment; allocate makes a new object.
    Communicator fresh = world.split(0, world.rank());
    const std::size_t count = 100000;
    auto* data = static_cast<float*>(fresh.allocate(count * sizeof(float)));
    for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<float>(fresh.rank() + 1);
    AllReduceOptions options;
    options.algorithm = Algorithm::kSharedMemory;
    fresh.all_reduce(data, data, count, DataType::kFloat32, options);
    const float expected = static_cast<float>(fresh.size() * (fresh.size() + 1) / 2);
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(data[i], expected) << "rank " << fresh.rank() << " index " << i;
    }
    fresh.deallocate(data);
  }
  for (const std::string& name : stale) shm_unlink(name.c_str());
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Hierarchical, EveryLayoutTypeAndOp) {
  const int ranks = Communicator::world().size();
  for (const std::vector<int>& layout : testing_support::node_layouts(ranks)) {
    Communicator comm = testing_support::with_virtual_nodes(layout);
    ASSERT_EQ(comm.topology().node_count(), static_cast<int>(layout.size()));
    for (const DataType type : kAllTypes) {
      for (const ReduceOp op : kAllOps) {
        if (!op_applies_to(op, type)) continue;
        for (const std::size_t count :
             {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{65}, std::size_t{4099}}) {
          run_exact(comm, Algorithm::kHierarchical, type, op, count, count % 2 == 1);
        }
      }
    }
    for (const std::size_t count : {std::size_t{70001}, kLargeCount}) {
      run_exact(comm, Algorithm::kHierarchical, DataType::kFloat32, ReduceOp::kSum, count, false);
      run_exact(comm, Algorithm::kHierarchical, DataType::kBFloat16, ReduceOp::kMean, count, true);
    }
    ASSERT_TRUE(all_ranks_agree(!HasFailure())) << "layout of " << layout.size() << " nodes";
  }
}

TEST(Hierarchical, AutoAgreesOnEveryRankWithVirtualNodes) {
  const int ranks = Communicator::world().size();
  for (const std::vector<int>& layout : testing_support::node_layouts(ranks)) {
    Communicator comm = testing_support::with_virtual_nodes(layout);
    for (std::size_t bytes = 8; bytes <= (std::size_t{1} << 30); bytes *= 4) {
      const int mine = static_cast<int>(
          comm.choose_algorithm(CollectiveKind::kAllReduce, bytes / 4, DataType::kFloat32));
      int low = mine;
      int high = mine;
      MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      EXPECT_EQ(low, high) << bytes << " B, " << layout.size() << " nodes";
      if (layout.size() > 1) {
        EXPECT_NE(mine, static_cast<int>(Algorithm::kSharedMemory));
      }
    }
    // AUTO runs and is right.
    run_exact(comm, comm.choose_algorithm(CollectiveKind::kAllReduce, 70001, DataType::kInt32),
              DataType::kInt32, ReduceOp::kSum, 70001, false);
  }
  ASSERT_TRUE(all_ranks_agree(!HasFailure()));
}

// AUTO's all_gather_v, gather_v and scatter_v with virtual nodes: every
// rank runs the same algorithm, never shared_memory across nodes, and
// shared_memory for an all_gather_v on one node whose largest block takes
// the single copy (docs/algorithms.md, AUTO); every element arrives.
// Uneven blocks, none on rank 1, above and below the cross-memory-attach
// size.
TEST(SharedMemory, AutoGathersAndScattersWithVirtualNodes) {
  const int ranks = Communicator::world().size();
  const auto p = static_cast<std::size_t>(ranks);
  auto value = [](int from, std::size_t i) {
    return static_cast<std::int32_t>(from * 1000003 + static_cast<int>(i % 999983));
  };
  for (const std::vector<int>& layout : testing_support::node_layouts(ranks)) {
    Communicator comm = testing_support::with_virtual_nodes(layout);
    const int rank = comm.rank();
    for (const std::size_t base : {std::size_t{3}, std::size_t{30001}}) {
      std::vector<std::size_t> counts(p), displs(p);
      std::size_t total = 0;
      for (std::size_t q = 0; q < p; ++q) {
        counts[q] = q == 1 ? 0 : base * (q + 1);
        displs[q] = total;
        total += counts[q];
      }
      const std::size_t own = counts[static_cast<std::size_t>(rank)];
      std::vector<std::int32_t> mine(own), whole(total, -1);
      for (std::size_t i = 0; i < own; ++i) mine[i] = value(rank, i);
      const std::string where = std::to_string(layout.size()) + " nodes, base " +
                                std::to_string(base) + ", rank " + std::to_string(rank);
      auto check_one_algorithm = [&](const char* what, bool single_copy) {
        const int used = static_cast<int>(comm.last_algorithm());
        int low = used;
        int high = used;
        MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        EXPECT_EQ(low, high) << what << ", " << where;
        const bool shared_memory = used == static_cast<int>(Algorithm::kSharedMemory);
        if (layout.size() > 1) {
          EXPECT_FALSE(shared_memory) << what << ", " << where;
        } else if (ranks > 1 && single_copy) {
          EXPECT_TRUE(shared_memory)
              << what << ", " << where << " ran " << to_string(comm.last_algorithm());
        }
      };
      auto check_whole = [&](const char* what) {
        for (std::size_t q = 0; q < p; ++q) {
          for (std::size_t i = 0; i < counts[q]; ++i) {
            ASSERT_EQ(whole[displs[q] + i], value(static_cast<int>(q), i))
                << what << ", " << where << " index " << displs[q] + i << " expected "
                << value(static_cast<int>(q), i) << " actual " << whole[displs[q] + i];
          }
        }
      };
      comm.all_gather_v(mine.data(), own, whole.data(), counts, displs, DataType::kInt32);
      check_one_algorithm("all_gather_v", base * p * sizeof(std::int32_t) >= 64 * 1024);
      check_whole("all_gather_v");
      std::fill(whole.begin(), whole.end(), -1);
      GatherOptions gather;
      gather.root = ranks - 1;
      comm.gather_v(mine.data(), own, whole.data(), counts, displs, DataType::kInt32, gather);
      check_one_algorithm("gather_v", false);
      if (rank == gather.root) check_whole("gather_v");
      ScatterOptions scatter;
      scatter.root = 0;
      if (rank == scatter.root) {
        for (std::size_t q = 0; q < p; ++q) {
          for (std::size_t i = 0; i < counts[q]; ++i)
            whole[displs[q] + i] = value(static_cast<int>(q), i);
        }
      }
      std::vector<std::int32_t> got(own, -1);
      comm.scatter_v(whole.data(), counts, displs, got.data(), own, DataType::kInt32, scatter);
      check_one_algorithm("scatter_v", false);
      if (rank == 0) check_whole("scatter_v source");
      // In a lambda: a rank that fails goes on with the others' calls.
      [&] {
        for (std::size_t i = 0; i < own; ++i) {
          ASSERT_EQ(got[i], value(rank, i))
              << "scatter_v, " << where << " index " << i << " expected " << value(rank, i)
              << " actual " << got[i];
        }
      }();
    }
    ASSERT_TRUE(all_ranks_agree(!HasFailure())) << "layout of " << layout.size() << " nodes";
  }
}

}  // namespace
}  // namespace collective
