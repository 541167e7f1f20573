// The MPI entry points libcollective_mpi.so replaces: MPI_Allreduce,
// MPI_Reduce_scatter_block, MPI_Allgather, MPI_Bcast, MPI_Reduce,
// MPI_Barrier and MPI_Finalize. Each either serves the call with
// libcollective or hands it, unchanged, to its PMPI_ twin; the rule is in
// docs/embedding.md and, piece by piece, in pass_reason() and mpi_types.h.
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>

#include "call_log.h"
#include "collective/in_tree/parameters.h"
#include "collective/collective.h"
#include "comm_map.h"
#include "mpi_types.h"
#include "reentry_guard.h"

namespace collective::pmpi {
namespace {

std::atomic<bool> mpi_finalized{false};

int rank_for_log(MPI_Comm comm) {
  int rank = -1;
  if (log_level() > 0 && comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &rank);
  return rank;
}

// Why a call on `comm` cannot be served whatever its arguments; "" when it can.
// Every thread level is served: MPI lets a program's threads call
// collectives on one communicator only one at a time, which is the rule of
// the Communicator mapped to it, and libcollective follows the level for
// separate communicators (docs/errors.md, "Threads on separate
// communicators").
std::string pass_reason(MPI_Comm comm) {
  int initialized = 0;
  PMPI_Initialized(&initialized);
  if (!initialized || mpi_finalized) return "MPI is not initialized, or finalized";
  if (comm == MPI_COMM_NULL) return "MPI_COMM_NULL";
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return "invalid communicator";
  if (inter) return "intercommunicator";
  return {};
}

bool overlap_not_equal(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto* x = static_cast<const char*>(a);
  const auto* y = static_cast<const char*>(b);
  if (x == y || a_bytes == 0 || b_bytes == 0) return false;
  return x < y + b_bytes && y < x + a_bytes;
}

std::string root_reason(MPI_Comm comm, int root) {
  int size = 0;
  PMPI_Comm_size(comm, &size);
  if (root < 0 || root >= size) return "root outside the communicator";
  return {};
}

// COLLECTIVE_PMPI_TIMEOUT seconds (default one day): MPI programs expect a
// collective to wait as long as its peers take (a barrier while rank 0
// writes a checkpoint), yet nothing here may wait forever.
std::chrono::milliseconds call_timeout(int rank) {
  struct Setting {
    std::chrono::milliseconds timeout{86'400'000};
    std::string error;  // a malformed value: raised by every served call
  };
  static const Setting setting = [] {
    Setting read;
    try {
      if (const auto seconds = seconds_parameter("COLLECTIVE_PMPI_TIMEOUT", 1e9)) {
        read.timeout = std::chrono::milliseconds(static_cast<long long>(*seconds * 1000));
      }
    } catch (const InvalidArgumentError& error) {
      read.error = error.cause();
    }
    return read;
  }();
  if (!setting.error.empty()) throw InvalidArgumentError("libcollective_mpi", rank, setting.error);
  return setting.timeout;
}

template <typename Options>
Options options(const Communicator& communicator) {
  Options o;
  o.timeout = call_timeout(communicator.rank());
  return o;
}

int error_class_of(const Error& error) {
  if (dynamic_cast<const InvalidArgumentError*>(&error) != nullptr) return MPI_ERR_ARG;
  if (dynamic_cast<const UnsupportedError*>(&error) != nullptr) {
    return MPI_ERR_UNSUPPORTED_OPERATION;
  }
  return MPI_ERR_OTHER;  // CommunicationError, TimeoutError
}

// Reports a failure the MPI way: one line on stderr with the library's
// message (an error class alone cannot carry it), then the communicator's
// error handler, whose verdict (abort, or return the class) stands.
int raise_through_errhandler(Intercepted call, MPI_Comm comm, int error_class,
                             const char* message) {
  log_failed(call, rank_for_log(comm));
  std::fprintf(stderr, "libcollective_mpi: %s: %s\n", mpi_name(call), message);
  PMPI_Comm_call_errhandler(comm, error_class);
  return error_class;
}

// Serves a call: body(communicator) runs the libcollective collective.
template <typename Body>
int serve(Intercepted call, MPI_Comm comm, Body&& body) {
  try {
    Communicator& communicator = mapped_communicator(comm);
    body(communicator);
    if (log_level() > 0) {
      log_served(call, communicator.rank(), to_string(communicator.last_algorithm()).data());
    }
    return MPI_SUCCESS;
  } catch (const Error& error) {
    return raise_through_errhandler(call, comm, error_class_of(error), error.what());
  } catch (const std::bad_alloc&) {
    return raise_through_errhandler(call, comm, MPI_ERR_NO_MEM, "out of memory");
  } catch (const std::exception& error) {
    return raise_through_errhandler(call, comm, MPI_ERR_INTERN, error.what());
  } catch (...) {
    return raise_through_errhandler(call, comm, MPI_ERR_INTERN, "unknown exception");
  }
}

}  // namespace
}  // namespace collective::pmpi

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
using collective::pmpi::options;
using collective::pmpi::overlap_not_equal;
using collective::pmpi::pass_reason;
using collective::pmpi::rank_for_log;
using collective::pmpi::ReentryGuard;
using collective::pmpi::root_reason;
using collective::pmpi::serve;

extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  if (ReentryGuard::active()) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  ReentryGuard guard;
  std::string reason = pass_reason(comm);
  std::optional<collective::pmpi::ReductionType> reduction;
  if (reason.empty() && count < 0) reason = "negative count";
  if (reason.empty()) reduction = collective::pmpi::reduction_type(datatype, op, reason);
  const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  if (reason.empty()) {
    const std::size_t bytes = static_cast<std::size_t>(count) * element_size(reduction->type);
    if (count > 0 && (send == nullptr || recvbuf == nullptr)) reason = "null buffer";
    else if (overlap_not_equal(send, bytes, recvbuf, bytes)) reason = "buffers overlap";
  }
  if (!reason.empty()) {
    log_passed(Intercepted::kAllreduce, rank_for_log(comm), reason);
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  }
  return serve(Intercepted::kAllreduce, comm, [&](Communicator& c) {
    auto o = options<AllReduceOptions>(c);
    o.op = reduction->op;
    c.all_reduce(send, recvbuf, static_cast<std::size_t>(count), reduction->type, o);
  });
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  }
  ReentryGuard guard;
  std::string reason = pass_reason(comm);
  std::optional<collective::pmpi::ReductionType> reduction;
  if (reason.empty() && recvcount < 0) reason = "negative count";
  if (reason.empty()) reduction = collective::pmpi::reduction_type(datatype, op, reason);
  int size = 0;
  if (reason.empty()) {
    PMPI_Comm_size(comm, &size);
    const std::size_t block = static_cast<std::size_t>(recvcount) * element_size(reduction->type);
    const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (recvcount > 0 && (in == nullptr || recvbuf == nullptr)) reason = "null buffer";
    else if (sendbuf != MPI_IN_PLACE &&
             overlap_not_equal(sendbuf, block * static_cast<std::size_t>(size), recvbuf, block)) {
      reason = "buffers overlap";
    }
  }
  if (!reason.empty()) {
    log_passed(Intercepted::kReduceScatterBlock, rank_for_log(comm), reason);
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  }
  return serve(Intercepted::kReduceScatterBlock, comm, [&](Communicator& c) {
    auto o = options<ReduceScatterOptions>(c);
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
    const std::size_t input_bytes =
        count * element_size(reduction->type) * static_cast<std::size_t>(size);
    const std::unique_ptr<std::byte[]> input(new std::byte[input_bytes]);
    if (input_bytes > 0) std::memcpy(input.get(), recvbuf, input_bytes);
    c.reduce_scatter(input.get(), recvbuf, count, reduction->type, o);
  });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  ReentryGuard guard;
  std::string reason = pass_reason(comm);
  if (reason.empty() && (recvcount < 0 || (sendbuf != MPI_IN_PLACE && sendcount < 0))) {
    reason = "negative count";
  }
  std::optional<std::size_t> block;
  if (reason.empty()) block = collective::pmpi::contiguous_bytes(recvtype, recvcount, reason);
  if (reason.empty() && sendbuf != MPI_IN_PLACE) {
    auto send_block = collective::pmpi::contiguous_bytes(sendtype, sendcount, reason);
    if (reason.empty() && *send_block != *block) reason = "send and receive sizes differ";
  }
  int size = 0, rank = 0;
  const void* send = sendbuf;
  if (reason.empty()) {
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    // libcollective's in-place form: send is this rank's block of recv.
    const char* own_block = static_cast<char*>(recvbuf) + static_cast<std::size_t>(rank) * *block;
    if (sendbuf == MPI_IN_PLACE) send = own_block;
    if (*block > 0 && (send == nullptr || recvbuf == nullptr)) reason = "null buffer";
    else if (send != own_block &&
             overlap_not_equal(send, *block, recvbuf, *block * static_cast<std::size_t>(size))) {
      reason = "buffers overlap";
    }
  }
  if (!reason.empty()) {
    log_passed(Intercepted::kAllgather, rank_for_log(comm), reason);
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  return serve(Intercepted::kAllgather, comm, [&](Communicator& c) {
    c.all_gather(send, recvbuf, *block, DataType::kUInt8, options<AllGatherOptions>(c));
  });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (ReentryGuard::active()) return PMPI_Bcast(buffer, count, datatype, root, comm);
  ReentryGuard guard;
  std::string reason = pass_reason(comm);
  if (reason.empty() && count < 0) reason = "negative count";
  if (reason.empty()) reason = root_reason(comm, root);
  std::optional<std::size_t> bytes;
  if (reason.empty()) bytes = collective::pmpi::contiguous_bytes(datatype, count, reason);
  if (reason.empty() && *bytes > 0 && buffer == nullptr) reason = "null buffer";
  if (!reason.empty()) {
    log_passed(Intercepted::kBcast, rank_for_log(comm), reason);
    return PMPI_Bcast(buffer, count, datatype, root, comm);
  }
  return serve(Intercepted::kBcast, comm, [&](Communicator& c) {
    auto o = options<BroadcastOptions>(c);
    o.root = root;
    c.broadcast(buffer, *bytes, DataType::kUInt8, o);
  });
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm) {
  if (ReentryGuard::active()) {
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  }
  ReentryGuard guard;
  std::string reason = pass_reason(comm);
  std::optional<collective::pmpi::ReductionType> reduction;
  if (reason.empty() && count < 0) reason = "negative count";
  if (reason.empty()) reason = root_reason(comm, root);
  if (reason.empty()) reduction = collective::pmpi::reduction_type(datatype, op, reason);
  int rank = 0;
  const void* send = sendbuf;
  void* recv = nullptr;
  if (reason.empty()) {
    PMPI_Comm_rank(comm, &rank);
    if (rank == root) recv = recvbuf;
    if (sendbuf == MPI_IN_PLACE) {
      if (rank != root) reason = "MPI_IN_PLACE on a rank other than the root";
      send = recvbuf;
    }
  }
  if (reason.empty()) {
    const std::size_t bytes = static_cast<std::size_t>(count) * element_size(reduction->type);
    if (count > 0 && (send == nullptr || (rank == root && recv == nullptr))) reason = "null buffer";
    else if (rank == root && overlap_not_equal(send, bytes, recv, bytes))
      reason = "buffers overlap";
  }
  if (!reason.empty()) {
    log_passed(Intercepted::kReduce, rank_for_log(comm), reason);
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  }
  return serve(Intercepted::kReduce, comm, [&](Communicator& c) {
    auto o = options<ReduceOptions>(c);
    o.op = reduction->op;
    o.root = root;
    c.reduce(send, recv, static_cast<std::size_t>(count), reduction->type, o);
  });
}

int MPI_Barrier(MPI_Comm comm) {
  if (ReentryGuard::active()) return PMPI_Barrier(comm);
  ReentryGuard guard;
  const std::string reason = pass_reason(comm);
  if (!reason.empty()) {
    log_passed(Intercepted::kBarrier, rank_for_log(comm), reason);
    return PMPI_Barrier(comm);
  }
  return serve(Intercepted::kBarrier, comm,
               [&](Communicator& c) { c.barrier(options<BarrierOptions>(c)); });
}

// Frees every Communicator the drop-in made while MPI still works, then
// finalizes MPI.
int MPI_Finalize(void) {
  if (!ReentryGuard::active()) {
    ReentryGuard guard;
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    collective::pmpi::release_all();
    collective::pmpi::log_summary(rank);
  }
  collective::pmpi::mpi_finalized = true;
  return PMPI_Finalize();
}

}  // extern "C"
