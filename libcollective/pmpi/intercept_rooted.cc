// The drop-in's entry points for the rooted data movement: MPI_Gather,
// MPI_Gatherv, MPI_Scatter and MPI_Scatterv, served as bytes by the rule of
// the exchanges (contiguous datatypes, int counts and displacements as byte
// ones, MPI_IN_PLACE at the root mapped to the library's in-place forms).
// Their datatypes differ between the root and the other ranks as a rule (a
// vector type at the root, a predefined one elsewhere), so one rank may be
// able to serve a call that another must pass: the ranks agree first, with
// one 4-byte PMPI_Allreduce, and the call is served only where every rank
// can serve it (docs/embedding.md, "What is served"). Their MPI_I* forms
// are passed to PMPI_ every time, logged: that agreement is a collective
// of its own, which would make starting the call wait for every rank
// (MPI requires a nonblocking collective to start without waiting for
// anyone; a program may send to a peer right after it and have the peer
// receive before its own start).
#include <mpi.h>

#include <cstddef>
#include <span>

#include "byte_counts.h"
#include "call_log.h"
#include "collective/collective.h"
#include "mpi_types.h"
#include "reentry_guard.h"
#include "served_call.h"

using collective::Communicator;
using collective::DataType;
using collective::GatherOptions;
using collective::ScatterOptions;
using collective::pmpi::blocks_overlap;
using collective::pmpi::contiguous_element_bytes;
using collective::pmpi::CountsSlot;
using collective::pmpi::extent_of;
using collective::pmpi::Form;
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

// Every rank's verdict on a call it could serve (`reason` null) or not:
// the call is served only when all can. Leaves `reason` set on every rank
// that passes the call.
void agree(MPI_Comm comm, const char*& reason) {
  int mine = reason == nullptr ? 1 : 0, all = 0;
  PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  if (all == 0 && reason == nullptr) reason = "another rank's arguments are not served";
}

// The bytes of `count` elements of `datatype` when it is served as bytes.
std::size_t bytes_of(MPI_Datatype datatype, int count, const char*& reason) {
  if (reason) return 0;
  if (count < 0) {
    reason = "negative count";
    return 0;
  }
  const auto unit = contiguous_element_bytes(datatype, reason);
  return unit ? *unit * static_cast<std::size_t>(count) : 0;
}

}  // namespace

extern "C" {

COLLECTIVE_PMPI_ENTRY int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                     MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  }
  ReentryGuard guard;
  const Target target = Target::of(comm);
  const char* reason = target.pass_reason;
  if (!reason && (root < 0 || root >= target.size)) reason = "root outside the communicator";
  if (reason) {  // the same on every rank: no agreement needed
    log_passed(Intercepted::kGather, rank_for_log(comm), reason);
    return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  }
  const bool at_root = target.rank == root;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const auto size = static_cast<std::size_t>(target.size);
  std::size_t block = 0;
  const void* send = sendbuf;
  void* recv = nullptr;
  if (at_root) {
    block = bytes_of(recvtype, recvcount, reason);
    recv = recvbuf;
    if (!reason && in_place) {
      send = static_cast<char*>(recvbuf) + static_cast<std::size_t>(root) * block;
    } else if (!reason && bytes_of(sendtype, sendcount, reason) != block && !reason) {
      reason = "send and receive sizes differ";
    }
    if (!reason && block > 0 && (recvbuf == nullptr || send == nullptr)) reason = "null buffer";
    if (!reason && !in_place && overlap_not_equal(send, block, recvbuf, block * size)) {
      reason = "buffers overlap";
    }
  } else {
    if (in_place) reason = "MPI_IN_PLACE on a rank other than the root";
    block = bytes_of(sendtype, sendcount, reason);
    if (!reason && block > 0 && sendbuf == nullptr) reason = "null buffer";
  }
  agree(comm, reason);
  if (reason) {
    log_passed(Intercepted::kGather, rank_for_log(comm), reason);
    return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  }
  return serve(Intercepted::kGather, comm, target, [&](Communicator& c) {
    auto o = options_for<GatherOptions>(target.rank);
    o.root = root;
    c.gather(send, recv, block, DataType::kUInt8, o);
  });
}

COLLECTIVE_PMPI_ENTRY int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void* recvbuf, const int recvcounts[], const int displs[],
                                      MPI_Datatype recvtype, int root, MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                        comm);
  }
  ReentryGuard guard;
  const Target target = Target::of(comm);
  const char* reason = target.pass_reason;
  if (!reason && (root < 0 || root >= target.size)) reason = "root outside the communicator";
  if (reason) {
    log_passed(Intercepted::kGatherv, rank_for_log(comm), reason);
    return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                        comm);
  }
  const bool at_root = target.rank == root;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  std::span<const std::size_t> counts, places;  // the root's only
  std::size_t send_bytes = 0;
  const void* send = sendbuf;
  void* recv = nullptr;
  if (at_root) {
    recv = recvbuf;
    if (recvcounts == nullptr || displs == nullptr) reason = "null count or displacement array";
    if (!reason) {
      if (const auto unit = contiguous_element_bytes(recvtype, reason)) {
        counts = to_bytes(recvcounts, target.size, *unit, CountsSlot::kRecvCounts, reason);
        if (!reason) {
          places = to_bytes(displs, target.size, *unit, CountsSlot::kRecvDisplacements, reason);
        }
      }
    }
    if (!reason) {
      const auto own = static_cast<std::size_t>(root);
      if (in_place) {
        send = static_cast<char*>(recvbuf) + places[own];
        send_bytes = counts[own];
      } else {
        send_bytes = bytes_of(sendtype, sendcount, reason);
        if (!reason && send_bytes != counts[own]) reason = "send and receive sizes differ";
      }
    }
    if (!reason) {
      const auto extent = extent_of(counts, places);
      if ((extent.end > extent.begin && recvbuf == nullptr) ||
          (send_bytes > 0 && send == nullptr)) {
        reason = "null buffer";
      } else if (blocks_overlap(counts, places)) {
        reason = "receive blocks overlap";
      } else if (!in_place && overlap_not_equal(send, send_bytes, recvbuf, extent.end)) {
        reason = "buffers overlap";
      }
    }
  } else {
    if (in_place) reason = "MPI_IN_PLACE on a rank other than the root";
    send_bytes = bytes_of(sendtype, sendcount, reason);
    if (!reason && send_bytes > 0 && sendbuf == nullptr) reason = "null buffer";
  }
  agree(comm, reason);
  if (reason) {
    log_passed(Intercepted::kGatherv, rank_for_log(comm), reason);
    return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                        comm);
  }
  return serve(Intercepted::kGatherv, comm, target, [&](Communicator& c) {
    auto o = options_for<GatherOptions>(target.rank);
    o.root = root;
    c.gather_v(send, send_bytes, recv, counts, places, DataType::kUInt8, o);
  });
}

COLLECTIVE_PMPI_ENTRY int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                      MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  }
  ReentryGuard guard;
  const Target target = Target::of(comm);
  const char* reason = target.pass_reason;
  if (!reason && (root < 0 || root >= target.size)) reason = "root outside the communicator";
  if (reason) {
    log_passed(Intercepted::kScatter, rank_for_log(comm), reason);
    return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  }
  const bool at_root = target.rank == root;
  const bool in_place = recvbuf == MPI_IN_PLACE;
  const auto size = static_cast<std::size_t>(target.size);
  std::size_t block = 0;
  const void* send = nullptr;
  void* recv = recvbuf;
  if (at_root) {
    block = bytes_of(sendtype, sendcount, reason);
    send = sendbuf;
    if (!reason && in_place) {
      recv =
          static_cast<char*>(const_cast<void*>(sendbuf)) + static_cast<std::size_t>(root) * block;
    } else if (!reason && bytes_of(recvtype, recvcount, reason) != block && !reason) {
      reason = "send and receive sizes differ";
    }
    if (!reason && block > 0 && (sendbuf == nullptr || recv == nullptr)) reason = "null buffer";
    if (!reason && !in_place && overlap_not_equal(sendbuf, block * size, recvbuf, block)) {
      reason = "buffers overlap";
    }
  } else {
    if (in_place) reason = "MPI_IN_PLACE on a rank other than the root";
    block = bytes_of(recvtype, recvcount, reason);
    if (!reason && block > 0 && recvbuf == nullptr) reason = "null buffer";
  }
  agree(comm, reason);
  if (reason) {
    log_passed(Intercepted::kScatter, rank_for_log(comm), reason);
    return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  }
  return serve(Intercepted::kScatter, comm, target, [&](Communicator& c) {
    auto o = options_for<ScatterOptions>(target.rank);
    o.root = root;
    c.scatter(send, recv, block, DataType::kUInt8, o);
  });
}

COLLECTIVE_PMPI_ENTRY int MPI_Scatterv(const void* sendbuf, const int sendcounts[],
                                       const int displs[], MPI_Datatype sendtype, void* recvbuf,
                                       int recvcount, MPI_Datatype recvtype, int root,
                                       MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                         comm);
  }
  ReentryGuard guard;
  const Target target = Target::of(comm);
  const char* reason = target.pass_reason;
  if (!reason && (root < 0 || root >= target.size)) reason = "root outside the communicator";
  if (reason) {
    log_passed(Intercepted::kScatterv, rank_for_log(comm), reason);
    return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                         comm);
  }
  const bool at_root = target.rank == root;
  const bool in_place = recvbuf == MPI_IN_PLACE;
  std::span<const std::size_t> counts, places;  // the root's only
  std::size_t recv_bytes = 0;
  const void* send = nullptr;
  void* recv = recvbuf;
  if (at_root) {
    send = sendbuf;
    if (sendcounts == nullptr || displs == nullptr) reason = "null count or displacement array";
    if (!reason) {
      if (const auto unit = contiguous_element_bytes(sendtype, reason)) {
        counts = to_bytes(sendcounts, target.size, *unit, CountsSlot::kSendCounts, reason);
        if (!reason) {
          places = to_bytes(displs, target.size, *unit, CountsSlot::kSendDisplacements, reason);
        }
      }
    }
    if (!reason) {
      const auto own = static_cast<std::size_t>(root);
      if (in_place) {
        recv = static_cast<char*>(const_cast<void*>(sendbuf)) + places[own];
        recv_bytes = counts[own];
      } else {
        recv_bytes = bytes_of(recvtype, recvcount, reason);
        if (!reason && recv_bytes != counts[own]) reason = "send and receive sizes differ";
      }
    }
    if (!reason) {
      const auto extent = extent_of(counts, places);
      if ((extent.end > extent.begin && sendbuf == nullptr) ||
          (recv_bytes > 0 && recv == nullptr)) {
        reason = "null buffer";
      } else if (!in_place && overlap_not_equal(sendbuf, extent.end, recvbuf, recv_bytes)) {
        reason = "buffers overlap";
      }
    }
  } else {
    if (in_place) reason = "MPI_IN_PLACE on a rank other than the root";
    recv_bytes = bytes_of(recvtype, recvcount, reason);
    if (!reason && recv_bytes > 0 && recvbuf == nullptr) reason = "null buffer";
  }
  agree(comm, reason);
  if (reason) {
    log_passed(Intercepted::kScatterv, rank_for_log(comm), reason);
    return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                         comm);
  }
  return serve(Intercepted::kScatterv, comm, target, [&](Communicator& c) {
    auto o = options_for<ScatterOptions>(target.rank);
    o.root = root;
    c.scatter_v(send, counts, places, recv, recv_bytes, DataType::kUInt8, o);
  });
}

// The MPI_I* forms: passed, for the reason above.
constexpr const char* kRootedStartedReason =
    "a nonblocking rooted call is passed (serving needs every rank's verdict first)";

COLLECTIVE_PMPI_ENTRY int MPI_Igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                      MPI_Comm comm, MPI_Request* request) {
  if (!ReentryGuard::active()) {
    ReentryGuard guard;
    log_passed(Intercepted::kGather, rank_for_log(comm), kRootedStartedReason, Form::kStarted);
  }
  return PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                      request);
}

COLLECTIVE_PMPI_ENTRY int MPI_Igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void* recvbuf, const int recvcounts[], const int displs[],
                                       MPI_Datatype recvtype, int root, MPI_Comm comm,
                                       MPI_Request* request) {
  if (!ReentryGuard::active()) {
    ReentryGuard guard;
    log_passed(Intercepted::kGatherv, rank_for_log(comm), kRootedStartedReason, Form::kStarted);
  }
  return PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                       comm, request);
}

COLLECTIVE_PMPI_ENTRY int MPI_Iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                       int root, MPI_Comm comm, MPI_Request* request) {
  if (!ReentryGuard::active()) {
    ReentryGuard guard;
    log_passed(Intercepted::kScatter, rank_for_log(comm), kRootedStartedReason, Form::kStarted);
  }
  return PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                       request);
}

COLLECTIVE_PMPI_ENTRY int MPI_Iscatterv(const void* sendbuf, const int sendcounts[],
                                        const int displs[], MPI_Datatype sendtype, void* recvbuf,
                                        int recvcount, MPI_Datatype recvtype, int root,
                                        MPI_Comm comm, MPI_Request* request) {
  if (!ReentryGuard::active()) {
    ReentryGuard guard;
    log_passed(Intercepted::kScatterv, rank_for_log(comm), kRootedStartedReason, Form::kStarted);
  }
  return PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                        comm, request);
}

}  // extern "C"
