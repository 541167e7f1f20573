// Persistent plans of every collective (Communicator::X_init, one
// mechanism with all_reduce_init): for each collective with a case
// (cases/), out of place and in place, counts 0, 7 and 70001, float32 and
// int64, a plan made once and started three times, the receive buffer
// reset to a sentinel and the inputs rewritten before every start, every
// element checked after every start. The v-forms' count and displacement
// arrays given at creation are overwritten right after it: the plan holds
// its own copies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "collective_case.h"
#include "per_rank_counts.h"
#include "value_pattern.h"

namespace {

using collective::CollectiveKind;
using collective::Communicator;
using collective::DataType;
using collective::Plan;
using collective::ReduceOp;
namespace cases = collective::cases;

Communicator& world() {
  static Communicator comm = Communicator::world();
  return comm;
}

// The `_init` form of what cases::CollectiveCase::run calls.
Plan make_plan(Communicator& comm, CollectiveKind kind, const cases::CallArgs& args) {
  const std::size_t own = cases::count_of(args.shape(), args.count, args.rank);
  switch (kind) {
    case CollectiveKind::kAllReduce: {
      collective::AllReduceOptions options;
      options.op = args.op;
      return comm.all_reduce_init(args.send, args.recv, args.count, args.type, options);
    }
    case CollectiveKind::kReduceScatter: {
      collective::ReduceScatterOptions options;
      options.op = args.op;
      return comm.reduce_scatter_init(args.send, args.recv, args.count, args.type, options);
    }
    case CollectiveKind::kAllGather:
      return comm.all_gather_init(args.send, args.recv, args.count, args.type);
    case CollectiveKind::kBroadcast: {
      collective::BroadcastOptions options;
      options.root = args.root;
      return comm.broadcast_init(args.recv, args.count, args.type, options);
    }
    case CollectiveKind::kReduce: {
      collective::ReduceOptions options;
      options.op = args.op;
      options.root = args.root;
      return comm.reduce_init(args.send, args.recv, args.count, args.type, options);
    }
    case CollectiveKind::kBarrier: return comm.barrier_init();
    case CollectiveKind::kAllToAll:
      return comm.all_to_all_init(args.send, args.recv, args.count, args.type);
    case CollectiveKind::kAllToAllV:
      return comm.all_to_all_v_init(args.send, args.send_counts, args.send_displacements, args.recv,
                                    args.recv_counts, args.recv_displacements, args.type);
    case CollectiveKind::kAllGatherV:
      return comm.all_gather_v_init(args.send, own, args.recv, args.recv_counts,
                                    args.recv_displacements, args.type);
    case CollectiveKind::kReduceScatterV: {
      collective::ReduceScatterOptions options;
      options.op = args.op;
      return comm.reduce_scatter_v_init(args.send, args.recv, args.recv_counts, args.type, options);
    }
    case CollectiveKind::kGather: {
      collective::GatherOptions options;
      options.root = args.root;
      return comm.gather_init(args.send, args.recv, args.count, args.type, options);
    }
    case CollectiveKind::kGatherV: {
      collective::GatherOptions options;
      options.root = args.root;
      return comm.gather_v_init(args.send, own, args.recv, args.recv_counts,
                                args.recv_displacements, args.type, options);
    }
    case CollectiveKind::kScatter: {
      collective::ScatterOptions options;
      options.root = args.root;
      return comm.scatter_init(args.send, args.recv, args.count, args.type, options);
    }
    case CollectiveKind::kScatterV: {
      collective::ScatterOptions options;
      options.root = args.root;
      return comm.scatter_v_init(args.send, args.send_counts, args.send_displacements, args.recv,
                                 own, args.type, options);
    }
  }
  ADD_FAILURE() << "no _init for kind " << static_cast<int>(kind);
  return Plan();
}

void clobber(std::vector<std::size_t>& values) {
  std::fill(values.begin(), values.end(), std::size_t{123456789});
  values.clear();
  values.shrink_to_fit();
}

TEST(PlanEveryCollective, StartedThreeTimesExactAfterEveryStart) {
  Communicator& comm = world();
  const int root = comm.size() - 1;
  for (const CollectiveKind kind : cases::kinds_with_cases()) {
    const auto c = cases::make_collective_case(kind);
    const std::size_t uneven = c->per_rank_counts() ? 4 : 1;
    for (const std::size_t count : {std::size_t{0}, std::size_t{7}, std::size_t{70001}}) {
      for (const DataType type : {DataType::kFloat32, DataType::kInt64}) {
        for (const bool in_place : {false, true}) {
          if (in_place ? !c->has_in_place() : !c->has_out_of_place()) continue;
          const std::size_t element = collective::element_size(type);
          const cases::Shape shape{comm.size(), comm.rank(), uneven};
          const cases::Geometry geometry = c->geometry(count, element, shape);
          std::vector<std::byte> send(geometry.send_elements * element + 64);
          std::vector<std::byte> recv(geometry.recv_elements * element + 64);
          cases::CallArgs args;
          args.send_base = send.data();
          args.recv_base = recv.data();
          args.count = count;
          args.type = type;
          args.op = ReduceOp::kSum;
          args.root = root;
          args.in_place = in_place;
          args.rank = comm.rank();
          args.ranks = comm.size();
          args.uneven = uneven;
          c->place(args);
          const std::string what = std::string(c->name()) + " count " + std::to_string(count) +
                                   " " + std::string(collective::to_string(type)) +
                                   (in_place ? " in place" : "") + " rank " +
                                   std::to_string(comm.rank());
          cases::CallArgs given = args;
          Plan plan;
          ASSERT_NO_THROW(plan = make_plan(comm, kind, given)) << what;
          clobber(given.send_counts);
          clobber(given.send_displacements);
          clobber(given.recv_counts);
          clobber(given.recv_displacements);
          for (int round = 0; round < 3; ++round) {
            cases::fill_sentinel(type, cases::Region{recv.data(), geometry.recv_elements, 0});
            for (const cases::Region& input : c->inputs(args)) {
              cases::fill_inputs(c->pattern(args), args.rank, input);
            }
            ASSERT_NO_THROW(plan.start().wait()) << what << " start " << round;
            const cases::WrongElements wrong = c->check(args);
            ASSERT_EQ(wrong.count, 0u)
                << what << " start " << round << ": " << cases::describe_wrong(wrong, args.rank);
          }
        }
      }
    }
  }
  Plan barrier = comm.barrier_init();
  for (int round = 0; round < 3; ++round) ASSERT_NO_THROW(barrier.start().wait());
}

}  // namespace
