#include "mpi_counterparts.h"

#include <climits>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace collective::bench {
namespace {

void all_reduce(const MpiBaseline& mpi, const CallArgs& args) {
  const std::size_t element = element_size(args.type);
  const auto* send = static_cast<const std::byte*>(args.send);
  auto* recv = static_cast<std::byte*>(args.recv);
  MpiBaseline::for_each_piece(args.count, [&](std::size_t first, int count) {
    const void* source = args.in_place ? MPI_IN_PLACE : send + first * element;
    mpi.check(MPI_Allreduce(source, recv + first * element, count, MpiBaseline::datatype(args.type),
                            mpi.op(args.type, args.op), mpi.comm()),
              "MPI_Allreduce");
  });
  mpi.finish_mean(args.recv, args.count, args.type, args.op);
}

void reduce_scatter(const MpiBaseline& mpi, const CallArgs& args) {
  const int count = static_cast<int>(args.count);
  void* target = args.in_place ? args.send_base : args.recv;
  const void* source = args.in_place ? MPI_IN_PLACE : args.send;
  mpi.check(MPI_Reduce_scatter_block(source, target, count, MpiBaseline::datatype(args.type),
                                     mpi.op(args.type, args.op), mpi.comm()),
            "MPI_Reduce_scatter_block");
  mpi.finish_mean(target, args.count, args.type, args.op);
}

void all_gather(const MpiBaseline& mpi, const CallArgs& args) {
  const int count = static_cast<int>(args.count);
  const MPI_Datatype datatype = MpiBaseline::datatype(args.type);
  if (args.in_place) {
    mpi.check(
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, args.recv, count, datatype, mpi.comm()),
        "MPI_Allgather");
  } else {
    mpi.check(MPI_Allgather(args.send, count, datatype, args.recv, count, datatype, mpi.comm()),
              "MPI_Allgather");
  }
}

void broadcast(const MpiBaseline& mpi, const CallArgs& args) {
  const std::size_t element = element_size(args.type);
  auto* buffer = static_cast<std::byte*>(args.recv);
  MpiBaseline::for_each_piece(args.count, [&](std::size_t first, int count) {
    mpi.check(MPI_Bcast(buffer + first * element, count, MpiBaseline::datatype(args.type),
                        args.root, mpi.comm()),
              "MPI_Bcast");
  });
}

void reduce(const MpiBaseline& mpi, const CallArgs& args) {
  const std::size_t element = element_size(args.type);
  const bool root = args.rank == args.root;
  const auto* send = static_cast<const std::byte*>(args.send);
  auto* recv = static_cast<std::byte*>(args.recv);
  MpiBaseline::for_each_piece(args.count, [&](std::size_t first, int count) {
    const void* source = root && args.in_place ? MPI_IN_PLACE : send + first * element;
    void* target = root ? recv + first * element : nullptr;
    mpi.check(MPI_Reduce(source, target, count, MpiBaseline::datatype(args.type),
                         mpi.op(args.type, args.op), args.root, mpi.comm()),
              "MPI_Reduce");
  });
  if (root) mpi.finish_mean(args.recv, args.count, args.type, args.op);
}

void all_to_all(const MpiBaseline& mpi, const CallArgs& args) {
  const int count = static_cast<int>(args.count);
  const MPI_Datatype datatype = MpiBaseline::datatype(args.type);
  const void* source = args.in_place ? MPI_IN_PLACE : args.send;
  mpi.check(MPI_Alltoall(source, count, datatype, args.recv, count, datatype, mpi.comm()),
            "MPI_Alltoall");
}

void all_to_all_v(const MpiBaseline& mpi, const CallArgs& args) {
  const MPI_Datatype datatype = MpiBaseline::datatype(args.type);
  const std::vector<int> send_counts = MpiBaseline::int_counts(args.send_counts);
  const std::vector<int> send_displacements = MpiBaseline::int_counts(args.send_displacements);
  const std::vector<int> recv_counts = MpiBaseline::int_counts(args.recv_counts);
  const std::vector<int> recv_displacements = MpiBaseline::int_counts(args.recv_displacements);
  const void* source = args.in_place ? MPI_IN_PLACE : args.send;
  mpi.check(
      MPI_Alltoallv(source, send_counts.data(), send_displacements.data(), datatype, args.recv,
                    recv_counts.data(), recv_displacements.data(), datatype, mpi.comm()),
      "MPI_Alltoallv");
}

void all_gather_v(const MpiBaseline& mpi, const CallArgs& args) {
  const MPI_Datatype datatype = MpiBaseline::datatype(args.type);
  const std::vector<int> recv_counts = MpiBaseline::int_counts(args.recv_counts);
  const std::vector<int> recv_displacements = MpiBaseline::int_counts(args.recv_displacements);
  const void* source = args.in_place ? MPI_IN_PLACE : args.send;
  mpi.check(
      MPI_Allgatherv(source, recv_counts[static_cast<std::size_t>(args.rank)], datatype, args.recv,
                     recv_counts.data(), recv_displacements.data(), datatype, mpi.comm()),
      "MPI_Allgatherv");
}

void reduce_scatter_v(const MpiBaseline& mpi, const CallArgs& args) {
  const std::vector<int> recv_counts = MpiBaseline::int_counts(args.recv_counts);
  void* target = args.in_place ? args.send_base : args.recv;
  const void* source = args.in_place ? MPI_IN_PLACE : args.send;
  mpi.check(MPI_Reduce_scatter(source, target, recv_counts.data(), MpiBaseline::datatype(args.type),
                               mpi.op(args.type, args.op), mpi.comm()),
            "MPI_Reduce_scatter");
  mpi.finish_mean(target, args.recv_counts[static_cast<std::size_t>(args.rank)], args.type,
                  args.op);
}

void gather(const MpiBaseline& mpi, const CallArgs& args) {
  const int count = static_cast<int>(args.count);
  const MPI_Datatype datatype = MpiBaseline::datatype(args.type);
  const bool root = args.rank == args.root;
  const void* source = root && args.in_place ? MPI_IN_PLACE : args.send;
  mpi.check(MPI_Gather(source, count, datatype, args.recv, count, datatype, args.root, mpi.comm()),
            "MPI_Gather");
}

void gather_v(const MpiBaseline& mpi, const CallArgs& args) {
  const MPI_Datatype datatype = MpiBaseline::datatype(args.type);
  const std::vector<int> recv_counts = MpiBaseline::int_counts(args.recv_counts);
  const std::vector<int> recv_displacements = MpiBaseline::int_counts(args.recv_displacements);
  const bool root = args.rank == args.root;
  const void* source = root && args.in_place ? MPI_IN_PLACE : args.send;
  mpi.check(
      MPI_Gatherv(source, static_cast<int>(args.send_counts.front()), datatype, args.recv,
                  recv_counts.data(), recv_displacements.data(), datatype, args.root, mpi.comm()),
      "MPI_Gatherv");
}

void scatter(const MpiBaseline& mpi, const CallArgs& args) {
  const int count = static_cast<int>(args.count);
  const MPI_Datatype datatype = MpiBaseline::datatype(args.type);
  const bool root = args.rank == args.root;
  void* target = root && args.in_place ? MPI_IN_PLACE : args.recv;
  mpi.check(MPI_Scatter(args.send, count, datatype, target, count, datatype, args.root, mpi.comm()),
            "MPI_Scatter");
}

void scatter_v(const MpiBaseline& mpi, const CallArgs& args) {
  const MPI_Datatype datatype = MpiBaseline::datatype(args.type);
  const std::vector<int> send_counts = MpiBaseline::int_counts(args.send_counts);
  const std::vector<int> send_displacements = MpiBaseline::int_counts(args.send_displacements);
  const bool root = args.rank == args.root;
  void* target = root && args.in_place ? MPI_IN_PLACE : args.recv;
  mpi.check(
      MPI_Scatterv(args.send, send_counts.data(), send_displacements.data(), datatype, target,
                   static_cast<int>(args.recv_counts.front()), datatype, args.root, mpi.comm()),
      "MPI_Scatterv");
}

}  // namespace

void run_mpi(const CollectiveCase& c, const MpiBaseline& mpi, const CallArgs& args) {
  switch (c.kind()) {
    case CollectiveKind::kAllReduce: return all_reduce(mpi, args);
    case CollectiveKind::kReduceScatter: return reduce_scatter(mpi, args);
    case CollectiveKind::kAllGather: return all_gather(mpi, args);
    case CollectiveKind::kBroadcast: return broadcast(mpi, args);
    case CollectiveKind::kReduce: return reduce(mpi, args);
    case CollectiveKind::kAllToAll: return all_to_all(mpi, args);
    case CollectiveKind::kAllToAllV: return all_to_all_v(mpi, args);
    case CollectiveKind::kAllGatherV: return all_gather_v(mpi, args);
    case CollectiveKind::kReduceScatterV: return reduce_scatter_v(mpi, args);
    case CollectiveKind::kGather: return gather(mpi, args);
    case CollectiveKind::kGatherV: return gather_v(mpi, args);
    case CollectiveKind::kScatter: return scatter(mpi, args);
    case CollectiveKind::kScatterV: return scatter_v(mpi, args);
    case CollectiveKind::kBarrier: break;
  }
  throw std::invalid_argument("--baseline mpi has no MPI call for " +
                              std::string(to_string(c.kind())));
}

ResultLayout mpi_result(const CollectiveCase& c, const CallArgs& args) {
  ResultLayout layout = c.result(args);
  const bool reduce_scatter =
      c.kind() == CollectiveKind::kReduceScatter || c.kind() == CollectiveKind::kReduceScatterV;
  if (reduce_scatter && args.in_place) layout.data = args.send_base;
  return layout;
}

const char* mpi_limit(const CollectiveCase& c, const Geometry& geometry,
                      const cases::Shape& shape) {
  constexpr auto kIntMax = static_cast<std::size_t>(INT_MAX);
  switch (c.kind()) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce: return nullptr;  // split into pieces of INT_MAX elements
    case CollectiveKind::kReduceScatter:
      if (geometry.count <= kIntMax) return nullptr;
      return "MPI_Reduce_scatter_block takes an int count per rank; the block exceeds 2^31-1 "
             "elements";
    case CollectiveKind::kAllGather:
      if (geometry.count <= kIntMax) return nullptr;
      return "MPI_Allgather takes an int count per rank; the block exceeds 2^31-1 elements";
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kGather:
    case CollectiveKind::kScatter:
      if (geometry.count <= kIntMax) return nullptr;
      return "the MPI call takes an int count per rank; the block exceeds 2^31-1 elements";
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kAllGatherV:
    case CollectiveKind::kReduceScatterV:
    case CollectiveKind::kGatherV:
    case CollectiveKind::kScatterV: {
      // The largest displacement lies within the blocks of every rank.
      const std::size_t largest =
          (shape.uneven + static_cast<std::size_t>(shape.ranks)) * (geometry.count + 1);
      if (geometry.count <= kIntMax / (shape.uneven + static_cast<std::size_t>(shape.ranks)) &&
          largest <= kIntMax) {
        return nullptr;
      }
      return "the MPI call takes int counts and displacements; the blocks reach beyond 2^31-1 "
             "elements";
    }
    case CollectiveKind::kBarrier: return nullptr;
  }
  return nullptr;
}

}  // namespace collective::bench
