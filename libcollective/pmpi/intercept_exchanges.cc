// The drop-in's entry points for the exchanges with a block per peer:
// MPI_Alltoall, MPI_Alltoallv and MPI_Allgatherv. Served as bytes (rule 6
// of docs/embedding.md: contiguous datatypes, predefined or derived), int
// counts and displacements turned into byte ones; MPI_IN_PLACE mapped to
// the library's in-place forms; anything else passed to PMPI_ unchanged.
#include <mpi.h>

#include <cstddef>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "byte_counts.h"
#include "call_log.h"
#include "collective/collective.h"
#include "mpi_types.h"
#include "reentry_guard.h"
#include "served_call.h"

using collective::AllGatherOptions;
using collective::AllToAllOptions;
using collective::Communicator;
using collective::DataType;
using collective::pmpi::blocks_overlap;
using collective::pmpi::contiguous_element_bytes;
using collective::pmpi::CountsSlot;
using collective::pmpi::extent_of;
using collective::pmpi::Intercepted;
using collective::pmpi::log_passed;
using collective::pmpi::options_for;
using collective::pmpi::overlap_not_equal;
using collective::pmpi::rank_for_log;
using collective::pmpi::ReentryGuard;
using collective::pmpi::serve;
using collective::pmpi::Target;
using collective::pmpi::to_bytes;

namespace {

// This rank's block of an MPI_Allgatherv receive buffer: sending from it
// is the library's in-place form.
const char* own_block_of(const void* recvbuf, std::span<const std::size_t> displacements,
                         int rank) {
  return static_cast<const char*>(recvbuf) + displacements[static_cast<std::size_t>(rank)];
}

// The input of an in-place MPI_Alltoallv, kept per thread with its capacity.
std::vector<std::byte>& in_place_copy() {
  thread_local std::vector<std::byte> copy;
  return copy;
}

}  // namespace

extern "C" {

COLLECTIVE_PMPI_ENTRY int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                       MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  ReentryGuard guard;
  const Target target = Target::of(comm);
  const char* reason = target.pass_reason;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (!reason && (recvcount < 0 || (!in_place && sendcount < 0))) reason = "negative count";
  std::size_t block = 0;  // bytes to and from each peer
  if (!reason) {
    if (const auto bytes = contiguous_element_bytes(recvtype, reason)) {
      block = *bytes * static_cast<std::size_t>(recvcount);
    }
  }
  if (!reason && !in_place) {
    const auto send_bytes = contiguous_element_bytes(sendtype, reason);
    if (!reason && *send_bytes * static_cast<std::size_t>(sendcount) != block) {
      reason = "send and receive sizes differ";
    }
  }
  const auto size = static_cast<std::size_t>(target.size);
  if (!reason) {
    if (block > 0 && (recvbuf == nullptr || (!in_place && sendbuf == nullptr))) {
      reason = "null buffer";
    } else if (!in_place && sendbuf == recvbuf && block > 0) {
      reason = "send and receive buffers are the same without MPI_IN_PLACE";
    } else if (!in_place && overlap_not_equal(sendbuf, block * size, recvbuf, block * size)) {
      reason = "buffers overlap";
    }
  }
  if (reason) {
    log_passed(Intercepted::kAlltoall, rank_for_log(comm), reason);
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  return serve(Intercepted::kAlltoall, comm, target, [&](Communicator& c) {
    // The library's in-place form: send == recv.
    c.all_to_all(in_place ? recvbuf : sendbuf, recvbuf, block, DataType::kUInt8,
                 options_for<AllToAllOptions>(target.rank));
  });
}

COLLECTIVE_PMPI_ENTRY int MPI_Alltoallv(const void* sendbuf, const int sendcounts[],
                                        const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                        const int recvcounts[], const int rdispls[],
                                        MPI_Datatype recvtype, MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                          recvtype, comm);
  }
  ReentryGuard guard;
  const Target target = Target::of(comm);
  const char* reason = target.pass_reason;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  std::span<const std::size_t> send_counts, send_displacements, recv_counts, recv_displacements;
  if (!reason && (recvcounts == nullptr || rdispls == nullptr ||
                  (!in_place && (sendcounts == nullptr || sdispls == nullptr)))) {
    reason = "null count or displacement array";
  }
  if (!reason) {
    if (const auto unit = contiguous_element_bytes(recvtype, reason)) {
      recv_counts = to_bytes(recvcounts, target.size, *unit, CountsSlot::kRecvCounts, reason);
      if (!reason) {
        recv_displacements =
            to_bytes(rdispls, target.size, *unit, CountsSlot::kRecvDisplacements, reason);
      }
    }
  }
  if (!reason && !in_place) {
    if (const auto unit = contiguous_element_bytes(sendtype, reason)) {
      send_counts = to_bytes(sendcounts, target.size, *unit, CountsSlot::kSendCounts, reason);
      if (!reason) {
        send_displacements =
            to_bytes(sdispls, target.size, *unit, CountsSlot::kSendDisplacements, reason);
      }
    }
  }
  if (!reason) {
    const auto recv_extent = extent_of(recv_counts, recv_displacements);
    const auto send_extent = in_place ? recv_extent : extent_of(send_counts, send_displacements);
    const bool receives = recv_extent.end > recv_extent.begin;
    const bool sends = send_extent.end > send_extent.begin;
    if ((receives && recvbuf == nullptr) || (sends && !in_place && sendbuf == nullptr)) {
      reason = "null buffer";
    } else if (!in_place && sendbuf == recvbuf && (sends || receives)) {
      reason = "send and receive buffers are the same without MPI_IN_PLACE";
    } else if (blocks_overlap(recv_counts, recv_displacements)) {
      reason = "receive blocks overlap";
    } else if (!in_place && sends && receives &&
               overlap_not_equal(sendbuf, send_extent.end, recvbuf, recv_extent.end)) {
      // The buffers as the library sees them: from their start to their last block's end.
      reason = "buffers overlap";
    }
  }
  if (reason) {
    log_passed(Intercepted::kAlltoallv, rank_for_log(comm), reason);
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                          recvtype, comm);
  }
  return serve(Intercepted::kAlltoallv, comm, target, [&](Communicator& c) {
    if (in_place) {
      // Served out of place from a copy of what recvbuf holds to send, not
      // through the library's in-place form: Open MPI 4.1.4's
      // MPI_Ialltoallv, which the mpi algorithm uses below
      // MPI_THREAD_MULTIPLE (every program that calls MPI_Init), delivers
      // in-place blocks to the wrong ranks (docs/embedding.md).
      const std::size_t bytes = extent_of(recv_counts, recv_displacements).end;
      std::vector<std::byte>& copy = in_place_copy();
      copy.resize(bytes);
      if (bytes > 0) std::memcpy(copy.data(), recvbuf, bytes);
      c.all_to_all_v(copy.data(), recv_counts, recv_displacements, recvbuf, recv_counts,
                     recv_displacements, DataType::kUInt8,
                     options_for<AllToAllOptions>(target.rank));
    } else {
      c.all_to_all_v(sendbuf, send_counts, send_displacements, recvbuf, recv_counts,
                     recv_displacements, DataType::kUInt8,
                     options_for<AllToAllOptions>(target.rank));
    }
  });
}

COLLECTIVE_PMPI_ENTRY int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                         void* recvbuf, const int recvcounts[], const int displs[],
                                         MPI_Datatype recvtype, MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                           comm);
  }
  ReentryGuard guard;
  const Target target = Target::of(comm);
  const char* reason = target.pass_reason;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (!reason && !in_place && sendcount < 0) reason = "negative count";
  if (!reason && (recvcounts == nullptr || displs == nullptr)) {
    reason = "null count or displacement array";
  }
  std::span<const std::size_t> recv_counts, recv_displacements;
  if (!reason) {
    if (const auto unit = contiguous_element_bytes(recvtype, reason)) {
      recv_counts = to_bytes(recvcounts, target.size, *unit, CountsSlot::kRecvCounts, reason);
      if (!reason) {
        recv_displacements =
            to_bytes(displs, target.size, *unit, CountsSlot::kRecvDisplacements, reason);
      }
    }
  }
  const auto rank = static_cast<std::size_t>(target.rank);
  std::size_t send_bytes = 0;
  const void* send = sendbuf;
  if (!reason) {
    // The library's in-place form: send is this rank's block of recv.
    const char* own_block = static_cast<char*>(recvbuf) + recv_displacements[rank];
    if (in_place) {
      send = own_block;
      send_bytes = recv_counts[rank];
    } else if (const auto unit = contiguous_element_bytes(sendtype, reason)) {
      send_bytes = *unit * static_cast<std::size_t>(sendcount);
      if (send_bytes != recv_counts[rank]) reason = "send and receive sizes differ";
    }
  }
  if (!reason) {
    const auto recv_extent = extent_of(recv_counts, recv_displacements);
    if ((recv_extent.end > recv_extent.begin && recvbuf == nullptr) ||
        (send_bytes > 0 && send == nullptr)) {
      reason = "null buffer";
    } else if (blocks_overlap(recv_counts, recv_displacements)) {
      reason = "receive blocks overlap";
    } else if (!in_place && send != own_block_of(recvbuf, recv_displacements, target.rank) &&
               overlap_not_equal(send, send_bytes, recvbuf, recv_extent.end)) {
      // The buffers as the library sees them: recv from its start to its last block's end.
      reason = "buffers overlap";
    }
  }
  if (reason) {
    log_passed(Intercepted::kAllgatherv, rank_for_log(comm), reason);
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                           comm);
  }
  return serve(Intercepted::kAllgatherv, comm, target, [&](Communicator& c) {
    c.all_gather_v(send, send_bytes, recvbuf, recv_counts, recv_displacements, DataType::kUInt8,
                   options_for<AllGatherOptions>(target.rank));
  });
}

}  // extern "C"
