// The MPI entry points libcollective_mpi.so replaces: MPI_Allreduce,
// MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Allgather, MPI_Bcast,
// MPI_Reduce, MPI_Barrier and MPI_Finalize (the exchanges with a block per
// peer: intercept_exchanges.cc). Each either serves the call with
// libcollective or hands it, unchanged, to its PMPI_ twin; the rule is in
// docs/embedding.md and, piece by piece, in served_call.h (the
// communicator), here (the arguments) and mpi_types.h (datatypes and ops).
#include <mpi.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <span>

#include "byte_counts.h"
#include "call_log.h"
#include "collective/collective.h"
#include "comm_map.h"
#include "mpi_types.h"
#include "reentry_guard.h"
#include "served_call.h"

using collective::AllGatherOptions;
using collective::AllReduceOptions;
using collective::BarrierOptions;
using collective::BroadcastOptions;
using collective::Communicator;
using collective::DataType;
using collective::ReduceOptions;
using collective::ReduceScatterOptions;
using collective::pmpi::Intercepted;
using collective::pmpi::log_passed;
using collective::pmpi::options_for;
using collective::pmpi::overlap_not_equal;
using collective::pmpi::rank_for_log;
using collective::pmpi::ReentryGuard;
using collective::pmpi::serve;
using collective::pmpi::Target;

extern "C" {

COLLECTIVE_PMPI_ENTRY int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  if (ReentryGuard::active()) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  ReentryGuard guard;
  const Target target = Target::of(comm);
  const char* reason = target.pass_reason;
  std::optional<collective::pmpi::ReductionType> reduction;
  if (!reason && count < 0) reason = "negative count";
  if (!reason) reduction = collective::pmpi::reduction_type(datatype, op, reason);
  const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  if (!reason) {
    const std::size_t bytes = static_cast<std::size_t>(count) * reduction->element_bytes;
    if (count > 0 && (send == nullptr || recvbuf == nullptr)) reason = "null buffer";
    else if (overlap_not_equal(send, bytes, recvbuf, bytes)) reason = "buffers overlap";
  }
  if (reason) {
    log_passed(Intercepted::kAllreduce, rank_for_log(comm), reason);
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  }
  return serve(Intercepted::kAllreduce, comm, target, [&](Communicator& c) {
    auto o = options_for<AllReduceOptions>(target.rank);
    o.op = reduction->op;
    c.all_reduce(send, recvbuf, static_cast<std::size_t>(count), reduction->type, o);
  });
}

COLLECTIVE_PMPI_ENTRY int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf,
                                                   int recvcount, MPI_Datatype datatype, MPI_Op op,
                                                   MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  }
  ReentryGuard guard;
  const Target target = Target::of(comm);
  const char* reason = target.pass_reason;
  std::optional<collective::pmpi::ReductionType> reduction;
  if (!reason && recvcount < 0) reason = "negative count";
  if (!reason) reduction = collective::pmpi::reduction_type(datatype, op, reason);
  const auto size = static_cast<std::size_t>(target.size);
  if (!reason) {
    const std::size_t block = static_cast<std::size_t>(recvcount) * reduction->element_bytes;
    const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (recvcount > 0 && (in == nullptr || recvbuf == nullptr)) reason = "null buffer";
    else if (sendbuf != MPI_IN_PLACE && overlap_not_equal(sendbuf, block * size, recvbuf, block)) {
      reason = "buffers overlap";
    }
  }
  if (reason) {
    log_passed(Intercepted::kReduceScatterBlock, rank_for_log(comm), reason);
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  }
  return serve(Intercepted::kReduceScatterBlock, comm, target, [&](Communicator& c) {
    auto o = options_for<ReduceScatterOptions>(target.rank);
    o.op = reduction->op;
    const auto count = static_cast<std::size_t>(recvcount);
    if (sendbuf != MPI_IN_PLACE) {
      c.reduce_scatter(sendbuf, recvbuf, count, reduction->type, o);
      return;
    }
    // MPI's in-place form reads recvbuf whole and writes only its first
    // block; the other blocks stay as the caller left them (Open MPI and
    // MPICH leave them alone, and programs rely on it). libcollective's
    // in-place form may use every block as scratch, so reduce a copy of
    // the input into the first block instead.
    const std::size_t input_bytes = count * reduction->element_bytes * size;
    const std::unique_ptr<std::byte[]> input(new std::byte[input_bytes]);
    if (input_bytes > 0) std::memcpy(input.get(), recvbuf, input_bytes);
    c.reduce_scatter(input.get(), recvbuf, count, reduction->type, o);
  });
}

COLLECTIVE_PMPI_ENTRY int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf,
                                             const int recvcounts[], MPI_Datatype datatype,
                                             MPI_Op op, MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
  }
  ReentryGuard guard;
  const Target target = Target::of(comm);
  const char* reason = target.pass_reason;
  if (!reason && recvcounts == nullptr) reason = "null count array";
  std::optional<collective::pmpi::ReductionType> reduction;
  if (!reason) reduction = collective::pmpi::reduction_type(datatype, op, reason);
  std::span<const std::size_t> counts;  // in elements
  if (!reason) {
    counts = collective::pmpi::to_bytes(recvcounts, target.size, 1,
                                        collective::pmpi::CountsSlot::kRecvCounts, reason);
  }
  std::size_t total = 0, mine = 0;
  if (!reason) {
    total = collective::pmpi::total_of(counts);
    mine = counts[static_cast<std::size_t>(target.rank)];
    const std::size_t element = reduction->element_bytes;
    const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if ((total > 0 && in == nullptr) || (mine > 0 && recvbuf == nullptr)) reason = "null buffer";
    else if (sendbuf != MPI_IN_PLACE &&
             overlap_not_equal(sendbuf, total * element, recvbuf, mine * element)) {
      reason = "buffers overlap";
    }
  }
  if (reason) {
    log_passed(Intercepted::kReduceScatter, rank_for_log(comm), reason);
    return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
  }
  return serve(Intercepted::kReduceScatter, comm, target, [&](Communicator& c) {
    auto o = options_for<ReduceScatterOptions>(target.rank);
    o.op = reduction->op;
    if (sendbuf != MPI_IN_PLACE) {
      c.reduce_scatter_v(sendbuf, recvbuf, counts, reduction->type, o);
      return;
    }
    // As MPI_Reduce_scatter_block's: MPI's in-place result goes to the start
    // of recvbuf (the library's in-place form puts it at this rank's
    // offset) and the rest stays as the caller left it, so a copy of the
    // input is reduced into recvbuf.
    const std::size_t input_bytes = total * reduction->element_bytes;
    const std::unique_ptr<std::byte[]> input(new std::byte[input_bytes]);
    if (input_bytes > 0) std::memcpy(input.get(), recvbuf, input_bytes);
    c.reduce_scatter_v(input.get(), recvbuf, counts, reduction->type, o);
  });
}

COLLECTIVE_PMPI_ENTRY int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                        void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                        MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  ReentryGuard guard;
  const Target target = Target::of(comm);
  const char* reason = target.pass_reason;
  if (!reason && (recvcount < 0 || (sendbuf != MPI_IN_PLACE && sendcount < 0))) {
    reason = "negative count";
  }
  std::size_t block = 0;
  if (!reason) {
    if (const auto bytes = collective::pmpi::contiguous_element_bytes(recvtype, reason)) {
      block = *bytes * static_cast<std::size_t>(recvcount);
    }
  }
  if (!reason && sendbuf != MPI_IN_PLACE) {
    const auto send_bytes = collective::pmpi::contiguous_element_bytes(sendtype, reason);
    if (!reason && *send_bytes * static_cast<std::size_t>(sendcount) != block) {
      reason = "send and receive sizes differ";
    }
  }
  const void* send = sendbuf;
  if (!reason) {
    // libcollective's in-place form: send is this rank's block of recv.
    const char* own_block =
        static_cast<char*>(recvbuf) + static_cast<std::size_t>(target.rank) * block;
    if (sendbuf == MPI_IN_PLACE) send = own_block;
    if (block > 0 && (send == nullptr || recvbuf == nullptr)) reason = "null buffer";
    else if (send != own_block &&
             overlap_not_equal(send, block, recvbuf,
                               block * static_cast<std::size_t>(target.size))) {
      reason = "buffers overlap";
    }
  }
  if (reason) {
    log_passed(Intercepted::kAllgather, rank_for_log(comm), reason);
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  return serve(Intercepted::kAllgather, comm, target, [&](Communicator& c) {
    c.all_gather(send, recvbuf, block, DataType::kUInt8,
                 options_for<AllGatherOptions>(target.rank));
  });
}

COLLECTIVE_PMPI_ENTRY int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root,
                                    MPI_Comm comm) {
  if (ReentryGuard::active()) return PMPI_Bcast(buffer, count, datatype, root, comm);
  ReentryGuard guard;
  const Target target = Target::of(comm);
  const char* reason = target.pass_reason;
  if (!reason && count < 0) reason = "negative count";
  if (!reason && (root < 0 || root >= target.size)) reason = "root outside the communicator";
  std::size_t bytes = 0;
  if (!reason) {
    if (const auto element = collective::pmpi::contiguous_element_bytes(datatype, reason)) {
      bytes = *element * static_cast<std::size_t>(count);
    }
  }
  if (!reason && bytes > 0 && buffer == nullptr) reason = "null buffer";
  if (reason) {
    log_passed(Intercepted::kBcast, rank_for_log(comm), reason);
    return PMPI_Bcast(buffer, count, datatype, root, comm);
  }
  return serve(Intercepted::kBcast, comm, target, [&](Communicator& c) {
    auto o = options_for<BroadcastOptions>(target.rank);
    o.root = root;
    c.broadcast(buffer, bytes, DataType::kUInt8, o);
  });
}

COLLECTIVE_PMPI_ENTRY int MPI_Reduce(const void* sendbuf, void* recvbuf, int count,
                                     MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  }
  ReentryGuard guard;
  const Target target = Target::of(comm);
  const char* reason = target.pass_reason;
  std::optional<collective::pmpi::ReductionType> reduction;
  if (!reason && count < 0) reason = "negative count";
  if (!reason && (root < 0 || root >= target.size)) reason = "root outside the communicator";
  if (!reason) reduction = collective::pmpi::reduction_type(datatype, op, reason);
  const bool at_root = target.rank == root;
  const void* send = sendbuf;
  void* recv = at_root ? recvbuf : nullptr;
  if (!reason && sendbuf == MPI_IN_PLACE) {
    if (!at_root) reason = "MPI_IN_PLACE on a rank other than the root";
    send = recvbuf;
  }
  if (!reason) {
    const std::size_t bytes = static_cast<std::size_t>(count) * reduction->element_bytes;
    if (count > 0 && (send == nullptr || (at_root && recv == nullptr))) reason = "null buffer";
    else if (at_root && overlap_not_equal(send, bytes, recv, bytes)) reason = "buffers overlap";
  }
  if (reason) {
    log_passed(Intercepted::kReduce, rank_for_log(comm), reason);
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  }
  return serve(Intercepted::kReduce, comm, target, [&](Communicator& c) {
    auto o = options_for<ReduceOptions>(target.rank);
    o.op = reduction->op;
    o.root = root;
    c.reduce(send, recv, static_cast<std::size_t>(count), reduction->type, o);
  });
}

COLLECTIVE_PMPI_ENTRY int MPI_Barrier(MPI_Comm comm) {
  if (ReentryGuard::active()) return PMPI_Barrier(comm);
  ReentryGuard guard;
  const Target target = Target::of(comm);
  if (target.pass_reason) {
    log_passed(Intercepted::kBarrier, rank_for_log(comm), target.pass_reason);
    return PMPI_Barrier(comm);
  }
  return serve(Intercepted::kBarrier, comm, target,
               [&](Communicator& c) { c.barrier(options_for<BarrierOptions>(target.rank)); });
}

// Frees every Communicator the drop-in made while MPI still works, then
// finalizes MPI.
COLLECTIVE_PMPI_ENTRY int MPI_Finalize(void) {
  if (!ReentryGuard::active()) {
    ReentryGuard guard;
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    collective::pmpi::release_all();
    collective::pmpi::log_summary(rank);
  }
  collective::pmpi::mark_mpi_finalized();
  return PMPI_Finalize();
}

}  // extern "C"
