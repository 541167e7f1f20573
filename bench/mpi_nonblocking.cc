#include "mpi_nonblocking.h"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace collective::bench {
std::string_view mpi_nonblocking_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "MPI_Iallreduce";
    case CollectiveKind::kReduceScatter: return "MPI_Ireduce_scatter_block";
    case CollectiveKind::kAllGather: return "MPI_Iallgather";
    case CollectiveKind::kBroadcast: return "MPI_Ibcast";
    case CollectiveKind::kReduce: return "MPI_Ireduce";
    case CollectiveKind::kBarrier: return "MPI_Ibarrier";
    case CollectiveKind::kAllToAll: return "MPI_Ialltoall";
    case CollectiveKind::kAllToAllV: return "MPI_Ialltoallv";
    case CollectiveKind::kAllGatherV: return "MPI_Iallgatherv";
    case CollectiveKind::kReduceScatterV: return "MPI_Ireduce_scatter";
    case CollectiveKind::kGather: return "MPI_Igather";
    case CollectiveKind::kGatherV: return "MPI_Igatherv";
    case CollectiveKind::kScatter: return "MPI_Iscatter";
    case CollectiveKind::kScatterV: return "MPI_Iscatterv";
  }
  throw std::invalid_argument("no MPI nonblocking call for collective " +
                              std::to_string(static_cast<int>(kind)));
}

MpiNonblockingCall::MpiNonblockingCall(CollectiveKind kind, const MpiBaseline& mpi, CallArgs args)
    : kind_(kind),
      mpi_(mpi),
      args_(std::move(args)),
      send_counts_(MpiBaseline::int_counts(args_.send_counts)),
      send_displacements_(MpiBaseline::int_counts(args_.send_displacements)),
      recv_counts_(MpiBaseline::int_counts(args_.recv_counts)),
      recv_displacements_(MpiBaseline::int_counts(args_.recv_displacements)) {}

MPI_Request* MpiNonblockingCall::next_request() {
  requests_.push_back(MPI_REQUEST_NULL);
  return &requests_.back();
}

void MpiNonblockingCall::start() {
  requests_.clear();
  const CallArgs& a = args_;
  const char* name = mpi_nonblocking_name(kind_).data();
  const MPI_Datatype datatype = MpiBaseline::datatype(a.type);
  const MPI_Comm comm = mpi_.comm();
  const std::size_t element = element_size(a.type);
  const auto* send = static_cast<const std::byte*>(a.send);
  auto* recv = static_cast<std::byte*>(a.recv);
  const int count = static_cast<int>(a.count);
  const bool root = a.rank == a.root;
  switch (kind_) {
    case CollectiveKind::kAllReduce:
      MpiBaseline::for_each_piece(a.count, [&](std::size_t first, int n) {
        const void* source = a.in_place ? MPI_IN_PLACE : send + first * element;
        mpi_.check(MPI_Iallreduce(source, recv + first * element, n, datatype,
                                  mpi_.op(a.type, a.op), comm, next_request()),
                   name);
      });
      return;
    case CollectiveKind::kReduceScatter:
      mpi_.check(MPI_Ireduce_scatter_block(a.in_place ? MPI_IN_PLACE : a.send,
                                           a.in_place ? a.send_base : a.recv, count, datatype,
                                           mpi_.op(a.type, a.op), comm, next_request()),
                 name);
      return;
    case CollectiveKind::kAllGather:
      if (a.in_place) {
        mpi_.check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a.recv, count, datatype, comm,
                                  next_request()),
                   name);
      } else {
        mpi_.check(
            MPI_Iallgather(a.send, count, datatype, a.recv, count, datatype, comm, next_request()),
            name);
      }
      return;
    case CollectiveKind::kBroadcast:
      MpiBaseline::for_each_piece(a.count, [&](std::size_t first, int n) {
        mpi_.check(MPI_Ibcast(recv + first * element, n, datatype, a.root, comm, next_request()),
                   name);
      });
      return;
    case CollectiveKind::kReduce:
      MpiBaseline::for_each_piece(a.count, [&](std::size_t first, int n) {
        const void* source = root && a.in_place ? MPI_IN_PLACE : send + first * element;
        void* target = root ? recv + first * element : nullptr;
        mpi_.check(MPI_Ireduce(source, target, n, datatype, mpi_.op(a.type, a.op), a.root, comm,
                               next_request()),
                   name);
      });
      return;
    case CollectiveKind::kBarrier: mpi_.check(MPI_Ibarrier(comm, next_request()), name); return;
    case CollectiveKind::kAllToAll:
      mpi_.check(MPI_Ialltoall(a.in_place ? MPI_IN_PLACE : a.send, count, datatype, a.recv, count,
                               datatype, comm, next_request()),
                 name);
      return;
    case CollectiveKind::kAllToAllV:
      mpi_.check(MPI_Ialltoallv(a.in_place ? MPI_IN_PLACE : a.send, send_counts_.data(),
                                send_displacements_.data(), datatype, a.recv, recv_counts_.data(),
                                recv_displacements_.data(), datatype, comm, next_request()),
                 name);
      return;
    case CollectiveKind::kAllGatherV:
      mpi_.check(MPI_Iallgatherv(a.in_place ? MPI_IN_PLACE : a.send,
                                 recv_counts_[static_cast<std::size_t>(a.rank)], datatype, a.recv,
                                 recv_counts_.data(), recv_displacements_.data(), datatype, comm,
                                 next_request()),
                 name);
      return;
    case CollectiveKind::kReduceScatterV:
      mpi_.check(MPI_Ireduce_scatter(a.in_place ? MPI_IN_PLACE : a.send,
                                     a.in_place ? a.send_base : a.recv, recv_counts_.data(),
                                     datatype, mpi_.op(a.type, a.op), comm, next_request()),
                 name);
      return;
    case CollectiveKind::kGather:
      mpi_.check(MPI_Igather(root && a.in_place ? MPI_IN_PLACE : a.send, count, datatype, a.recv,
                             count, datatype, a.root, comm, next_request()),
                 name);
      return;
    case CollectiveKind::kGatherV:
      mpi_.check(MPI_Igatherv(root && a.in_place ? MPI_IN_PLACE : a.send, send_counts_.front(),
                              datatype, a.recv, recv_counts_.data(), recv_displacements_.data(),
                              datatype, a.root, comm, next_request()),
                 name);
      return;
    case CollectiveKind::kScatter:
      mpi_.check(MPI_Iscatter(a.send, count, datatype, root && a.in_place ? MPI_IN_PLACE : a.recv,
                              count, datatype, a.root, comm, next_request()),
                 name);
      return;
    case CollectiveKind::kScatterV:
      mpi_.check(MPI_Iscatterv(a.send, send_counts_.data(), send_displacements_.data(), datatype,
                               root && a.in_place ? MPI_IN_PLACE : a.recv, recv_counts_.front(),
                               datatype, a.root, comm, next_request()),
                 name);
      return;
  }
}

void MpiNonblockingCall::wait() {
  mpi_.check(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE),
             "MPI_Waitall");
  const CallArgs& a = args_;
  switch (kind_) {
    case CollectiveKind::kAllReduce: mpi_.finish_mean(a.recv, a.count, a.type, a.op); return;
    case CollectiveKind::kReduceScatter:
      mpi_.finish_mean(a.in_place ? a.send_base : a.recv, a.count, a.type, a.op);
      return;
    case CollectiveKind::kReduce:
      if (a.rank == a.root) mpi_.finish_mean(a.recv, a.count, a.type, a.op);
      return;
    case CollectiveKind::kReduceScatterV:
      mpi_.finish_mean(a.in_place ? a.send_base : a.recv,
                       a.recv_counts[static_cast<std::size_t>(a.rank)], a.type, a.op);
      return;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kBarrier:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kAllGatherV:
    case CollectiveKind::kGather:
    case CollectiveKind::kGatherV:
    case CollectiveKind::kScatter:
    case CollectiveKind::kScatterV: return;  // nothing reduced
  }
}

}  // namespace collective::bench
