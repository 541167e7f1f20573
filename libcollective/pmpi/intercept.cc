// The MPI entry points libcollective_mpi.so replaces: MPI_Allreduce,
// MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Allgather, MPI_Bcast,
// MPI_Reduce, MPI_Barrier, their nonblocking MPI_I* forms, and MPI_Finalize
// (the exchanges with a block per peer: intercept_exchanges.cc). One
// template per collective holds both forms: the blocking one served by the
// blocking call, the MPI_I* one by the `_async` call, its Work the request
// (started_request.h), both by the same rule. Each either serves the call with
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
using collective::Work;
using collective::pmpi::Form;
using collective::pmpi::Intercepted;
using collective::pmpi::KeepAlive;
using collective::pmpi::log_passed;
using collective::pmpi::options_for;
using collective::pmpi::overlap_not_equal;
using collective::pmpi::rank_for_log;
using collective::pmpi::ReentryGuard;
using collective::pmpi::serve_as;
using collective::pmpi::Target;

namespace {

// The copy of an in-place input, kept until the call finished.
std::shared_ptr<std::byte[]> copy_of(const void* input, std::size_t bytes) {
  std::shared_ptr<std::byte[]> copy(new std::byte[bytes]);
  if (bytes > 0) std::memcpy(copy.get(), input, bytes);
  return copy;
}

template <Form kForm>
int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm, MPI_Request* request) {
  const auto pass = [&] {
    if constexpr (kForm == Form::kStarted) {
      return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
    } else {
      return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    }
  };
  if (ReentryGuard::active()) return pass();
  ReentryGuard guard;
  const Target target = Target::of_form<kForm>(comm);
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
    log_passed(Intercepted::kAllreduce, rank_for_log(comm), reason, kForm);
    return pass();
  }
  return serve_as<kForm>(Intercepted::kAllreduce, comm, target, request,
                         [&](Communicator& c, KeepAlive&) {
                           auto o = options_for<AllReduceOptions>(target.rank);
                           o.op = reduction->op;
                           const auto n = static_cast<std::size_t>(count);
                           if constexpr (kForm == Form::kStarted) {
                             return c.all_reduce_async(send, recvbuf, n, reduction->type, o);
                           } else {
                             c.all_reduce(send, recvbuf, n, reduction->type, o);
                           }
                         });
}

template <Form kForm>
int reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  const auto pass = [&] {
    if constexpr (kForm == Form::kStarted) {
      return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
    } else {
      return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
    }
  };
  if (ReentryGuard::active()) return pass();
  ReentryGuard guard;
  const Target target = Target::of_form<kForm>(comm);
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
    log_passed(Intercepted::kReduceScatterBlock, rank_for_log(comm), reason, kForm);
    return pass();
  }
  return serve_as<kForm>(Intercepted::kReduceScatterBlock, comm, target, request,
                         [&](Communicator& c, KeepAlive& keep_alive) {
                           auto o = options_for<ReduceScatterOptions>(target.rank);
                           o.op = reduction->op;
                           const auto count = static_cast<std::size_t>(recvcount);
                           const void* input = sendbuf;
                           // MPI's in-place form reads recvbuf whole and writes only its first
                           // block; the other blocks stay as the caller left them (Open MPI and
                           // MPICH leave them alone, and programs rely on it). libcollective's
                           // in-place form may use every block as scratch, so reduce a copy of
                           // the input into the first block instead.
                           if (sendbuf == MPI_IN_PLACE) {
                             auto copy = copy_of(recvbuf, count * reduction->element_bytes * size);
                             input = copy.get();
                             keep_alive = std::move(copy);
                           }
                           if constexpr (kForm == Form::kStarted) {
                             return c.reduce_scatter_async(input, recvbuf, count, reduction->type,
                                                           o);
                           } else {
                             c.reduce_scatter(input, recvbuf, count, reduction->type, o);
                           }
                         });
}

template <Form kForm>
int reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  const auto pass = [&] {
    if constexpr (kForm == Form::kStarted) {
      return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request);
    } else {
      return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
    }
  };
  if (ReentryGuard::active()) return pass();
  ReentryGuard guard;
  const Target target = Target::of_form<kForm>(comm);
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
    log_passed(Intercepted::kReduceScatter, rank_for_log(comm), reason, kForm);
    return pass();
  }
  return serve_as<kForm>(Intercepted::kReduceScatter, comm, target, request,
                         [&](Communicator& c, KeepAlive& keep_alive) {
                           auto o = options_for<ReduceScatterOptions>(target.rank);
                           o.op = reduction->op;
                           const void* input = sendbuf;
                           // As MPI_Reduce_scatter_block's: MPI's in-place result goes to the start
                           // of recvbuf (the library's in-place form puts it at this rank's
                           // offset) and the rest stays as the caller left it, so a copy of the
                           // input is reduced into recvbuf.
                           if (sendbuf == MPI_IN_PLACE) {
                             auto copy = copy_of(recvbuf, total * reduction->element_bytes);
                             input = copy.get();
                             keep_alive = std::move(copy);
                           }
                           if constexpr (kForm == Form::kStarted) {
                             return c.reduce_scatter_v_async(input, recvbuf, counts,
                                                             reduction->type, o);
                           } else {
                             c.reduce_scatter_v(input, recvbuf, counts, reduction->type, o);
                           }
                         });
}

template <Form kForm>
int allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  const auto pass = [&] {
    if constexpr (kForm == Form::kStarted) {
      return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                             request);
    } else {
      return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
  };
  if (ReentryGuard::active()) return pass();
  ReentryGuard guard;
  const Target target = Target::of_form<kForm>(comm);
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
    log_passed(Intercepted::kAllgather, rank_for_log(comm), reason, kForm);
    return pass();
  }
  return serve_as<kForm>(Intercepted::kAllgather, comm, target, request,
                         [&](Communicator& c, KeepAlive&) {
                           const auto o = options_for<AllGatherOptions>(target.rank);
                           if constexpr (kForm == Form::kStarted) {
                             return c.all_gather_async(send, recvbuf, block, DataType::kUInt8, o);
                           } else {
                             c.all_gather(send, recvbuf, block, DataType::kUInt8, o);
                           }
                         });
}

template <Form kForm>
int bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
          MPI_Request* request) {
  const auto pass = [&] {
    if constexpr (kForm == Form::kStarted) {
      return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
    } else {
      return PMPI_Bcast(buffer, count, datatype, root, comm);
    }
  };
  if (ReentryGuard::active()) return pass();
  ReentryGuard guard;
  const Target target = Target::of_form<kForm>(comm);
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
    log_passed(Intercepted::kBcast, rank_for_log(comm), reason, kForm);
    return pass();
  }
  return serve_as<kForm>(Intercepted::kBcast, comm, target, request,
                         [&](Communicator& c, KeepAlive&) {
                           auto o = options_for<BroadcastOptions>(target.rank);
                           o.root = root;
                           if constexpr (kForm == Form::kStarted) {
                             return c.broadcast_async(buffer, bytes, DataType::kUInt8, o);
                           } else {
                             c.broadcast(buffer, bytes, DataType::kUInt8, o);
                           }
                         });
}

template <Form kForm>
int reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
           int root, MPI_Comm comm, MPI_Request* request) {
  const auto pass = [&] {
    if constexpr (kForm == Form::kStarted) {
      return PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request);
    } else {
      return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    }
  };
  if (ReentryGuard::active()) return pass();
  ReentryGuard guard;
  const Target target = Target::of_form<kForm>(comm);
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
    log_passed(Intercepted::kReduce, rank_for_log(comm), reason, kForm);
    return pass();
  }
  return serve_as<kForm>(Intercepted::kReduce, comm, target, request,
                         [&](Communicator& c, KeepAlive&) {
                           auto o = options_for<ReduceOptions>(target.rank);
                           o.op = reduction->op;
                           o.root = root;
                           const auto n = static_cast<std::size_t>(count);
                           if constexpr (kForm == Form::kStarted) {
                             return c.reduce_async(send, recv, n, reduction->type, o);
                           } else {
                             c.reduce(send, recv, n, reduction->type, o);
                           }
                         });
}

template <Form kForm>
int barrier(MPI_Comm comm, MPI_Request* request) {
  const auto pass = [&] {
    if constexpr (kForm == Form::kStarted) {
      return PMPI_Ibarrier(comm, request);
    } else {
      return PMPI_Barrier(comm);
    }
  };
  if (ReentryGuard::active()) return pass();
  ReentryGuard guard;
  const Target target = Target::of_form<kForm>(comm);
  if (target.pass_reason) {
    log_passed(Intercepted::kBarrier, rank_for_log(comm), target.pass_reason, kForm);
    return pass();
  }
  return serve_as<kForm>(Intercepted::kBarrier, comm, target, request,
                         [&](Communicator& c, KeepAlive&) {
                           const auto o = options_for<BarrierOptions>(target.rank);
                           if constexpr (kForm == Form::kStarted) {
                             return c.barrier_async(o);
                           } else {
                             c.barrier(o);
                           }
                         });
}

}  // namespace

extern "C" {

COLLECTIVE_PMPI_ENTRY int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return allreduce<Form::kBlocking>(sendbuf, recvbuf, count, datatype, op, comm, nullptr);
}
COLLECTIVE_PMPI_ENTRY int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count,
                                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                         MPI_Request* request) {
  return allreduce<Form::kStarted>(sendbuf, recvbuf, count, datatype, op, comm, request);
}

COLLECTIVE_PMPI_ENTRY int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf,
                                                   int recvcount, MPI_Datatype datatype, MPI_Op op,
                                                   MPI_Comm comm) {
  return reduce_scatter_block<Form::kBlocking>(sendbuf, recvbuf, recvcount, datatype, op, comm,
                                               nullptr);
}
COLLECTIVE_PMPI_ENTRY int MPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf,
                                                    int recvcount, MPI_Datatype datatype, MPI_Op op,
                                                    MPI_Comm comm, MPI_Request* request) {
  return reduce_scatter_block<Form::kStarted>(sendbuf, recvbuf, recvcount, datatype, op, comm,
                                              request);
}

COLLECTIVE_PMPI_ENTRY int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf,
                                             const int recvcounts[], MPI_Datatype datatype,
                                             MPI_Op op, MPI_Comm comm) {
  return reduce_scatter<Form::kBlocking>(sendbuf, recvbuf, recvcounts, datatype, op, comm, nullptr);
}
COLLECTIVE_PMPI_ENTRY int MPI_Ireduce_scatter(const void* sendbuf, void* recvbuf,
                                              const int recvcounts[], MPI_Datatype datatype,
                                              MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return reduce_scatter<Form::kStarted>(sendbuf, recvbuf, recvcounts, datatype, op, comm, request);
}

COLLECTIVE_PMPI_ENTRY int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                        void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                        MPI_Comm comm) {
  return allgather<Form::kBlocking>(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm, nullptr);
}
COLLECTIVE_PMPI_ENTRY int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                         void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                         MPI_Comm comm, MPI_Request* request) {
  return allgather<Form::kStarted>(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                   request);
}

COLLECTIVE_PMPI_ENTRY int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root,
                                    MPI_Comm comm) {
  return bcast<Form::kBlocking>(buffer, count, datatype, root, comm, nullptr);
}
COLLECTIVE_PMPI_ENTRY int MPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root,
                                     MPI_Comm comm, MPI_Request* request) {
  return bcast<Form::kStarted>(buffer, count, datatype, root, comm, request);
}

COLLECTIVE_PMPI_ENTRY int MPI_Reduce(const void* sendbuf, void* recvbuf, int count,
                                     MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  return reduce<Form::kBlocking>(sendbuf, recvbuf, count, datatype, op, root, comm, nullptr);
}
COLLECTIVE_PMPI_ENTRY int MPI_Ireduce(const void* sendbuf, void* recvbuf, int count,
                                      MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                                      MPI_Request* request) {
  return reduce<Form::kStarted>(sendbuf, recvbuf, count, datatype, op, root, comm, request);
}

COLLECTIVE_PMPI_ENTRY int MPI_Barrier(MPI_Comm comm) {
  return barrier<Form::kBlocking>(comm, nullptr);
}
COLLECTIVE_PMPI_ENTRY int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  return barrier<Form::kStarted>(comm, request);
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
