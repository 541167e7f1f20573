// The drop-in's entry points for the exchanges with a block per peer:
// MPI_Alltoall, MPI_Alltoallv and MPI_Allgatherv, and their MPI_I* forms
// (one template per collective, as intercept.cc's). Served as bytes (rule 6
// of docs/embedding.md: contiguous datatypes, predefined or derived), int
// counts and displacements turned into byte ones; MPI_IN_PLACE mapped to
// the library's in-place forms; anything else passed to PMPI_ unchanged.
#include <mpi.h>

#include <cstddef>
#include <cstring>
#include <memory>
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
using collective::pmpi::Extent;
using collective::pmpi::extent_of;
using collective::pmpi::Form;
using collective::pmpi::Intercepted;
using collective::pmpi::KeepAlive;
using collective::pmpi::log_passed;
using collective::pmpi::options_for;
using collective::pmpi::overlap_not_equal;
using collective::pmpi::rank_for_log;
using collective::pmpi::receive_blocks;
using collective::pmpi::ReceiveBlocks;
using collective::pmpi::ReentryGuard;
using collective::pmpi::serve_as;
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

template <Form kForm>
int alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  const auto pass = [&] {
    if constexpr (kForm == Form::kStarted) {
      return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                            request);
    } else {
      return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
  };
  if (ReentryGuard::active()) return pass();
  ReentryGuard guard;
  const Target target = Target::of_form<kForm>(comm);
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
    log_passed(Intercepted::kAlltoall, rank_for_log(comm), reason, kForm);
    return pass();
  }
  return serve_as<kForm>(Intercepted::kAlltoall, comm, target, request,
                         [&](Communicator& c, KeepAlive&) {
                           // The library's in-place form: send == recv.
                           const void* send = in_place ? recvbuf : sendbuf;
                           const auto o = options_for<AllToAllOptions>(target.rank);
                           if constexpr (kForm == Form::kStarted) {
                             return c.all_to_all_async(send, recvbuf, block, DataType::kUInt8, o);
                           } else {
                             c.all_to_all(send, recvbuf, block, DataType::kUInt8, o);
                           }
                         });
}

template <Form kForm>
int alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
              MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
              MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  const auto pass = [&] {
    if constexpr (kForm == Form::kStarted) {
      return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                             recvtype, comm, request);
    } else {
      return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                            recvtype, comm);
    }
  };
  if (ReentryGuard::active()) return pass();
  ReentryGuard guard;
  const Target target = Target::of_form<kForm>(comm);
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
    log_passed(Intercepted::kAlltoallv, rank_for_log(comm), reason, kForm);
    return pass();
  }
  return serve_as<kForm>(
      Intercepted::kAlltoallv, comm, target, request, [&](Communicator& c, KeepAlive& keep_alive) {
        const auto o = options_for<AllToAllOptions>(target.rank);
        if constexpr (kForm == Form::kStarted) {
          // As below, from a copy that lives until the call finished.
          const void* send = sendbuf;
          auto counts = send_counts, displacements = send_displacements;
          if (in_place) {
            const std::size_t bytes = extent_of(recv_counts, recv_displacements).end;
            std::shared_ptr<std::byte[]> copy(new std::byte[bytes]);
            if (bytes > 0) std::memcpy(copy.get(), recvbuf, bytes);
            send = copy.get();
            keep_alive = std::move(copy);
            counts = recv_counts;
            displacements = recv_displacements;
          }
          return c.all_to_all_v_async(send, counts, displacements, recvbuf, recv_counts,
                                      recv_displacements, DataType::kUInt8, o);
        } else if (in_place) {
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
                         recv_displacements, DataType::kUInt8, o);
        } else {
          c.all_to_all_v(sendbuf, send_counts, send_displacements, recvbuf, recv_counts,
                         recv_displacements, DataType::kUInt8, o);
        }
      });
}

template <Form kForm>
int allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
               MPI_Request* request) {
  const auto pass = [&] {
    if constexpr (kForm == Form::kStarted) {
      return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                              comm, request);
    } else {
      return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                             comm);
    }
  };
  if (ReentryGuard::active()) return pass();
  ReentryGuard guard;
  const Target target = Target::of_form<kForm>(comm);
  const char* reason = target.pass_reason;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (!reason && !in_place && sendcount < 0) reason = "negative count";
  if (!reason && (recvcounts == nullptr || displs == nullptr)) {
    reason = "null count or displacement array";
  }
  ReceiveBlocks blocks;
  if (!reason) {
    if (const auto unit = contiguous_element_bytes(recvtype, reason)) {
      blocks = receive_blocks(recvcounts, displs, target.size, *unit, reason);
    }
  }
  const std::span<const std::size_t> recv_counts = blocks.counts;
  const std::span<const std::size_t> recv_displacements = blocks.displacements;
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
    const Extent recv_extent = blocks.extent;
    if ((recv_extent.end > recv_extent.begin && recvbuf == nullptr) ||
        (send_bytes > 0 && send == nullptr)) {
      reason = "null buffer";
    } else if (blocks.overlap) {
      reason = "receive blocks overlap";
    } else if (!in_place && send != own_block_of(recvbuf, recv_displacements, target.rank) &&
               overlap_not_equal(send, send_bytes, recvbuf, recv_extent.end)) {
      // The buffers as the library sees them: recv from its start to its last block's end.
      reason = "buffers overlap";
    }
  }
  if (reason) {
    log_passed(Intercepted::kAllgatherv, rank_for_log(comm), reason, kForm);
    return pass();
  }
  return serve_as<kForm>(Intercepted::kAllgatherv, comm, target, request,
                         [&](Communicator& c, KeepAlive&) {
                           const auto o = options_for<AllGatherOptions>(target.rank);
                           if constexpr (kForm == Form::kStarted) {
                             return c.all_gather_v_async(send, send_bytes, recvbuf, recv_counts,
                                                         recv_displacements, DataType::kUInt8, o);
                           } else {
                             c.all_gather_v(send, send_bytes, recvbuf, recv_counts,
                                            recv_displacements, DataType::kUInt8, o);
                           }
                         });
}

}  // namespace

extern "C" {

COLLECTIVE_PMPI_ENTRY int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                       MPI_Comm comm) {
  return alltoall<Form::kBlocking>(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                   nullptr);
}
COLLECTIVE_PMPI_ENTRY int MPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                        void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                        MPI_Comm comm, MPI_Request* request) {
  return alltoall<Form::kStarted>(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                  request);
}

COLLECTIVE_PMPI_ENTRY int MPI_Alltoallv(const void* sendbuf, const int sendcounts[],
                                        const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                        const int recvcounts[], const int rdispls[],
                                        MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoallv<Form::kBlocking>(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                    rdispls, recvtype, comm, nullptr);
}
COLLECTIVE_PMPI_ENTRY int MPI_Ialltoallv(const void* sendbuf, const int sendcounts[],
                                         const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                         const int recvcounts[], const int rdispls[],
                                         MPI_Datatype recvtype, MPI_Comm comm,
                                         MPI_Request* request) {
  return alltoallv<Form::kStarted>(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                   rdispls, recvtype, comm, request);
}

COLLECTIVE_PMPI_ENTRY int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                         void* recvbuf, const int recvcounts[], const int displs[],
                                         MPI_Datatype recvtype, MPI_Comm comm) {
  return allgatherv<Form::kBlocking>(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                     recvtype, comm, nullptr);
}
COLLECTIVE_PMPI_ENTRY int MPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                          void* recvbuf, const int recvcounts[], const int displs[],
                                          MPI_Datatype recvtype, MPI_Comm comm,
                                          MPI_Request* request) {
  return allgatherv<Form::kStarted>(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                    recvtype, comm, request);
}

}  // extern "C"
