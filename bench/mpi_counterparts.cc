#include "mpi_counterparts.h"

#include <climits>
#include <cstddef>
#include <stdexcept>
#include <string>

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

}  // namespace

void run_mpi(const CollectiveCase& c, const MpiBaseline& mpi, const CallArgs& args) {
  switch (c.kind()) {
    case CollectiveKind::kAllReduce: return all_reduce(mpi, args);
    case CollectiveKind::kReduceScatter: return reduce_scatter(mpi, args);
    case CollectiveKind::kAllGather: return all_gather(mpi, args);
    case CollectiveKind::kBroadcast: return broadcast(mpi, args);
    case CollectiveKind::kReduce: return reduce(mpi, args);
    case CollectiveKind::kBarrier:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kAllGatherV:
    case CollectiveKind::kReduceScatterV:
    case CollectiveKind::kGather:
    case CollectiveKind::kGatherV:
    case CollectiveKind::kScatter:
    case CollectiveKind::kScatterV: break;
  }
  throw std::invalid_argument("--baseline mpi has no MPI call for " +
                              std::string(to_string(c.kind())));
}

ResultLayout mpi_result(const CollectiveCase& c, const CallArgs& args) {
  ResultLayout layout = c.result(args);
  if (c.kind() == CollectiveKind::kReduceScatter && args.in_place) layout.data = args.send_base;
  return layout;
}

const char* mpi_limit(const CollectiveCase& c, const Geometry& geometry) {
  if (geometry.count <= static_cast<std::size_t>(INT_MAX)) return nullptr;
  switch (c.kind()) {
    case CollectiveKind::kReduceScatter:
      return "MPI_Reduce_scatter_block takes an int count per rank; the block exceeds 2^31-1 "
             "elements";
    case CollectiveKind::kAllGather:
      return "MPI_Allgather takes an int count per rank; the block exceeds 2^31-1 elements";
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
    case CollectiveKind::kBarrier:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kAllGatherV:
    case CollectiveKind::kReduceScatterV:
    case CollectiveKind::kGather:
    case CollectiveKind::kGatherV:
    case CollectiveKind::kScatter:
    case CollectiveKind::kScatterV: return nullptr;
  }
  return nullptr;
}

}  // namespace collective::bench
