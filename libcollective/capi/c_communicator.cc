// The communicator and collective entry points of collective_c.h, each a
// thin call of the C++ API inside the error boundary (last_error.h).
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "collective/collective_c.h"
#include "collective/in_tree/collectives.h"
#include "comm_handles.h"
#include "last_error.h"
#include "plan_handles.h"
#include "work_handles.h"

namespace collective::capi {
namespace {

// This process's rank in messages of the C layer: the communicator's, or
// the process's world rank when the communicator cannot tell.
int rank_of(const Communicator& communicator) noexcept {
  try {
    const int rank = communicator.rank();
    return rank >= 0 ? rank : process_rank();
  } catch (...) {
    return process_rank();
  }
}

int rank_of(collective_comm_t comm) noexcept {
  if (comm == nullptr) return process_rank();
  try {
    const CommEntry* entry = borrow_handle(comm);
    return entry ? rank_of(entry->communicator) : process_rank();
  } catch (...) {
    return process_rank();
  }
}

// The C++ options from the C ones (NULL: the defaults).
template <typename Options>
Options to_options(const collective_options_t* options) {
  Options converted;
  if (options != nullptr) {
    converted.algorithm = static_cast<Algorithm>(options->algorithm);
    converted.memory = static_cast<MemoryKind>(options->memory);
    converted.timeout = std::chrono::milliseconds(options->timeout_ms);
  }
  return converted;
}

// Runs body(communicator) after checking the handle: NULL, freed (through
// any copy) and never-issued handles are refused with a status
// (comm_handles.h).
template <typename Body>
int with_comm(const char* operation, collective_comm_t comm, Body&& body) noexcept {
  if (comm == nullptr) {
    return fail_argument(operation, process_rank(), "communicator handle is NULL");
  }
  CommEntry* entry = nullptr;
  try {
    entry = borrow_handle(comm);
    if (entry == nullptr) return fail_argument(operation, process_rank(), why_not_live(comm));
  } catch (...) {
    return fail_from_current_exception(operation, process_rank());
  }
  // The body makes no C API call of its own, so the borrowed entry stays
  // this thread's until it returns.
  return guarded(operation, rank_of(entry->communicator), [&] { body(entry->communicator); });
}

// Creates a handle from a Communicator factory into *out.
template <typename Make>
int make_comm(const char* operation, int rank, collective_comm_t* out, Make&& make) noexcept {
  if (out == nullptr) return fail_argument(operation, rank, "output handle pointer is NULL");
  *out = nullptr;
  return guarded(operation, rank, [&] { *out = issue_handle(make()); });
}

int null_output(const char* operation, collective_comm_t comm, const char* what) {
  return fail_argument(operation, rank_of(comm), std::string(what) + " pointer is NULL");
}

// A C array of one entry per rank of `c` as a span; NULL (where the call
// needs the array) is refused naming the function and the argument.
std::span<const std::size_t> per_rank(const char* operation, const Communicator& c,
                                      const size_t* array, const char* name) {
  if (array == nullptr) {
    throw InvalidArgumentError(operation, c.rank(), std::string(name) + " is NULL");
  }
  return {array, static_cast<std::size_t>(c.size())};
}

}  // namespace
}  // namespace collective::capi

using collective::capi::fail_argument;
using collective::capi::make_comm;
using collective::capi::null_output;
using collective::capi::per_rank;
using collective::capi::rank_of;
using collective::capi::to_options;
using collective::capi::with_comm;

extern "C" {

int collective_comm_world(collective_comm_t* out) {
  return make_comm("collective_comm_world", collective::capi::process_rank(), out, [] {
    collective::Communicator world = collective::Communicator::world();
    collective::capi::note_process_rank(world.rank());
    return world;
  });
}

int collective_comm_from_fint(int mpi_fortran_handle, collective_comm_t* out) {
  return make_comm("collective_comm_from_fint", collective::capi::process_rank(), out,
                   [&] { return collective::Communicator::from_mpi(mpi_fortran_handle); });
}

int collective_comm_split(collective_comm_t comm, int color, int key, collective_comm_t* out) {
  const char* operation = "collective_comm_split";
  if (out == nullptr) return null_output(operation, comm, "output handle");
  *out = nullptr;
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    *out = collective::capi::issue_handle(c.split(color, key));
  });
}

int collective_comm_subset(collective_comm_t comm, const int* ranks, int n,
                           collective_comm_t* out) {
  const char* operation = "collective_comm_subset";
  if (out == nullptr) return null_output(operation, comm, "output handle");
  *out = nullptr;
  if (n < 0) {
    return fail_argument(operation, rank_of(comm), "n is " + std::to_string(n) + ", expected >= 0");
  }
  if (n > 0 && ranks == nullptr) return null_output(operation, comm, "ranks");
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    const std::vector<int> listed(ranks, ranks + n);
    *out = collective::capi::issue_handle(c.subset(listed));
  });
}

int collective_comm_shrink(collective_comm_t comm, collective_comm_t* out) {
  const char* operation = "collective_comm_shrink";
  if (out == nullptr) return null_output(operation, comm, "output handle");
  *out = nullptr;
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    *out = collective::capi::issue_handle(c.shrink());
  });
}

int collective_comm_failed_ranks(collective_comm_t comm, int* ranks, int capacity, int* count) {
  const char* operation = "collective_comm_failed_ranks";
  if (count == nullptr) return null_output(operation, comm, "count");
  if (capacity < 0) {
    return fail_argument(operation, rank_of(comm),
                         "capacity is " + std::to_string(capacity) + ", expected >= 0");
  }
  if (capacity > 0 && ranks == nullptr) return null_output(operation, comm, "ranks");
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    const std::vector<int> failed = c.failed_ranks();
    *count = static_cast<int>(failed.size());
    for (int i = 0; i < capacity && i < *count; ++i) ranks[i] = failed[static_cast<std::size_t>(i)];
  });
}

int collective_comm_to_fint(collective_comm_t comm, int* mpi_fortran_handle) {
  const char* operation = "collective_comm_to_fint";
  if (mpi_fortran_handle == nullptr) return null_output(operation, comm, "output handle");
  return with_comm(operation, comm,
                   [&](collective::Communicator& c) { *mpi_fortran_handle = c.to_mpi(); });
}

int collective_comm_free(collective_comm_t* comm) {
  const char* operation = "collective_comm_free";
  if (comm == nullptr) {
    return fail_argument(operation, collective::capi::process_rank(), "handle pointer is NULL");
  }
  if (*comm == nullptr) return COLLECTIVE_SUCCESS;
  const collective_comm_t handle = *comm;
  *comm = nullptr;
  // Retired first, so exactly one caller frees it: a second free through a
  // copy, here or on another thread, finds it gone.
  std::shared_ptr<collective::capi::CommEntry> entry;
  std::string why;
  try {
    entry = collective::capi::retire_handle(handle, why);
  } catch (...) {
    return collective::capi::fail_from_current_exception(operation,
                                                         collective::capi::process_rank());
  }
  if (!entry) return fail_argument(operation, collective::capi::process_rank(), why);
  return collective::capi::guarded(operation, rank_of(entry->communicator),
                                   [&] { entry->communicator.free(); });
}

int collective_comm_rank(collective_comm_t comm, int* rank) {
  if (rank == nullptr) return null_output("collective_comm_rank", comm, "rank");
  return with_comm("collective_comm_rank", comm,
                   [&](collective::Communicator& c) { *rank = c.rank(); });
}

int collective_comm_size(collective_comm_t comm, int* size) {
  if (size == nullptr) return null_output("collective_comm_size", comm, "size");
  return with_comm("collective_comm_size", comm,
                   [&](collective::Communicator& c) { *size = c.size(); });
}

int collective_comm_node_count(collective_comm_t comm, int* nodes) {
  if (nodes == nullptr) return null_output("collective_comm_node_count", comm, "nodes");
  return with_comm("collective_comm_node_count", comm,
                   [&](collective::Communicator& c) { *nodes = c.topology().node_count(); });
}

int collective_comm_node_of(collective_comm_t comm, int rank, int* node) {
  if (node == nullptr) return null_output("collective_comm_node_of", comm, "node");
  return with_comm("collective_comm_node_of", comm,
                   [&](collective::Communicator& c) { *node = c.topology().node_of(rank); });
}

int collective_comm_local_rank(collective_comm_t comm, int rank, int* local_rank) {
  if (local_rank == nullptr) return null_output("collective_comm_local_rank", comm, "local_rank");
  return with_comm("collective_comm_local_rank", comm, [&](collective::Communicator& c) {
    *local_rank = c.topology().local_rank(rank);
  });
}

int collective_comm_topology_json(collective_comm_t comm, char* buffer, size_t length,
                                  size_t* needed) {
  const char* operation = "collective_comm_topology_json";
  if (buffer == nullptr && length > 0) {
    return fail_argument(operation, rank_of(comm), "buffer is NULL with length > 0");
  }
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    const std::string json = c.topology().to_json();
    if (needed != nullptr) *needed = json.size() + 1;
    if (length > 0) {
      const size_t copied = json.size() < length - 1 ? json.size() : length - 1;
      std::memcpy(buffer, json.data(), copied);
      buffer[copied] = '\0';
    }
  });
}

int collective_comm_allocate(collective_comm_t comm, size_t bytes, void** memory) {
  if (memory == nullptr) return null_output("collective_comm_allocate", comm, "memory");
  *memory = nullptr;
  return with_comm("collective_comm_allocate", comm,
                   [&](collective::Communicator& c) { *memory = c.allocate(bytes); });
}

int collective_comm_deallocate(collective_comm_t comm, void* memory) {
  return with_comm("collective_comm_deallocate", comm,
                   [&](collective::Communicator& c) { c.deallocate(memory); });
}

int collective_all_reduce(collective_comm_t comm, const void* send, void* recv, size_t count,
                          int dtype, int op, const collective_options_t* options) {
  return with_comm("collective_all_reduce", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::AllReduceOptions>(options);
    converted.op = static_cast<collective::ReduceOp>(op);
    c.all_reduce(send, recv, count, static_cast<collective::DataType>(dtype), converted);
  });
}

int collective_reduce_scatter(collective_comm_t comm, const void* send, void* recv,
                              size_t recv_count, int dtype, int op,
                              const collective_options_t* options) {
  return with_comm("collective_reduce_scatter", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ReduceScatterOptions>(options);
    converted.op = static_cast<collective::ReduceOp>(op);
    c.reduce_scatter(send, recv, recv_count, static_cast<collective::DataType>(dtype), converted);
  });
}

int collective_all_gather(collective_comm_t comm, const void* send, void* recv, size_t send_count,
                          int dtype, const collective_options_t* options) {
  return with_comm("collective_all_gather", comm, [&](collective::Communicator& c) {
    c.all_gather(send, recv, send_count, static_cast<collective::DataType>(dtype),
                 to_options<collective::AllGatherOptions>(options));
  });
}

int collective_broadcast(collective_comm_t comm, void* buffer, size_t count, int dtype, int root,
                         const collective_options_t* options) {
  return with_comm("collective_broadcast", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::BroadcastOptions>(options);
    converted.root = root;
    c.broadcast(buffer, count, static_cast<collective::DataType>(dtype), converted);
  });
}

int collective_reduce(collective_comm_t comm, const void* send, void* recv, size_t count, int dtype,
                      int op, int root, const collective_options_t* options) {
  return with_comm("collective_reduce", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ReduceOptions>(options);
    converted.op = static_cast<collective::ReduceOp>(op);
    converted.root = root;
    c.reduce(send, recv, count, static_cast<collective::DataType>(dtype), converted);
  });
}

int collective_barrier(collective_comm_t comm, const collective_options_t* options) {
  return with_comm("collective_barrier", comm, [&](collective::Communicator& c) {
    c.barrier(to_options<collective::BarrierOptions>(options));
  });
}

int collective_all_to_all(collective_comm_t comm, const void* send, void* recv, size_t count,
                          int dtype, const collective_options_t* options) {
  return with_comm("collective_all_to_all", comm, [&](collective::Communicator& c) {
    c.all_to_all(send, recv, count, static_cast<collective::DataType>(dtype),
                 to_options<collective::AllToAllOptions>(options));
  });
}

int collective_all_to_all_v(collective_comm_t comm, const void* send, const size_t* send_counts,
                            const size_t* send_displacements, void* recv, const size_t* recv_counts,
                            const size_t* recv_displacements, int dtype,
                            const collective_options_t* options) {
  const char* operation = "collective_all_to_all_v";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    const auto recv_spans = per_rank(operation, c, recv_counts, "recv_counts");
    const auto recv_places = per_rank(operation, c, recv_displacements, "recv_displacements");
    // In place (send == recv) the send arrays are ignored and may be NULL.
    const bool in_place = send == recv && send != nullptr;
    const auto send_spans = in_place && send_counts == nullptr
                                ? recv_spans
                                : per_rank(operation, c, send_counts, "send_counts");
    const auto send_places = in_place && send_displacements == nullptr
                                 ? recv_places
                                 : per_rank(operation, c, send_displacements, "send_displacements");
    c.all_to_all_v(send, send_spans, send_places, recv, recv_spans, recv_places,
                   static_cast<collective::DataType>(dtype),
                   to_options<collective::AllToAllOptions>(options));
  });
}

int collective_all_gather_v(collective_comm_t comm, const void* send, size_t send_count, void* recv,
                            const size_t* recv_counts, const size_t* recv_displacements, int dtype,
                            const collective_options_t* options) {
  const char* operation = "collective_all_gather_v";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    const auto counts = per_rank(operation, c, recv_counts, "recv_counts");
    const auto places = per_rank(operation, c, recv_displacements, "recv_displacements");
    c.all_gather_v(send, send_count, recv, counts, places, static_cast<collective::DataType>(dtype),
                   to_options<collective::AllGatherOptions>(options));
  });
}

int collective_reduce_scatter_v(collective_comm_t comm, const void* send, void* recv,
                                const size_t* recv_counts, int dtype, int op,
                                const collective_options_t* options) {
  const char* operation = "collective_reduce_scatter_v";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ReduceScatterOptions>(options);
    converted.op = static_cast<collective::ReduceOp>(op);
    c.reduce_scatter_v(send, recv, per_rank(operation, c, recv_counts, "recv_counts"),
                       static_cast<collective::DataType>(dtype), converted);
  });
}

int collective_gather(collective_comm_t comm, const void* send, void* recv, size_t send_count,
                      int dtype, int root, const collective_options_t* options) {
  return with_comm("collective_gather", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::GatherOptions>(options);
    converted.root = root;
    c.gather(send, recv, send_count, static_cast<collective::DataType>(dtype), converted);
  });
}

int collective_gather_v(collective_comm_t comm, const void* send, size_t send_count, void* recv,
                        const size_t* recv_counts, const size_t* recv_displacements, int dtype,
                        int root, const collective_options_t* options) {
  const char* operation = "collective_gather_v";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::GatherOptions>(options);
    converted.root = root;
    // Significant at the root only: elsewhere the arrays may be NULL.
    const bool at_root = c.rank() == root;
    std::span<const std::size_t> counts, places;
    if (at_root) {
      counts = per_rank(operation, c, recv_counts, "recv_counts");
      places = per_rank(operation, c, recv_displacements, "recv_displacements");
    }
    c.gather_v(send, send_count, recv, counts, places, static_cast<collective::DataType>(dtype),
               converted);
  });
}

int collective_scatter(collective_comm_t comm, const void* send, void* recv, size_t recv_count,
                       int dtype, int root, const collective_options_t* options) {
  return with_comm("collective_scatter", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ScatterOptions>(options);
    converted.root = root;
    c.scatter(send, recv, recv_count, static_cast<collective::DataType>(dtype), converted);
  });
}

int collective_scatter_v(collective_comm_t comm, const void* send, const size_t* send_counts,
                         const size_t* send_displacements, void* recv, size_t recv_count, int dtype,
                         int root, const collective_options_t* options) {
  const char* operation = "collective_scatter_v";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ScatterOptions>(options);
    converted.root = root;
    const bool at_root = c.rank() == root;
    std::span<const std::size_t> counts, places;
    if (at_root) {
      counts = per_rank(operation, c, send_counts, "send_counts");
      places = per_rank(operation, c, send_displacements, "send_displacements");
    }
    c.scatter_v(send, counts, places, recv, recv_count, static_cast<collective::DataType>(dtype),
                converted);
  });
}

int collective_all_reduce_async(collective_comm_t comm, const void* send, void* recv, size_t count,
                                int dtype, int op, const collective_options_t* options,
                                collective_work_t* work) {
  if (work == nullptr)
    return null_output("collective_all_reduce_async", comm, "output work handle");
  *work = nullptr;

  return with_comm("collective_all_reduce_async", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::AllReduceOptions>(options);
    converted.op = static_cast<collective::ReduceOp>(op);
    *work = collective::capi::issue_work(
        c.all_reduce_async(send, recv, count, static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_all_reduce_init(collective_comm_t comm, const void* send, void* recv, size_t count,
                               int dtype, int op, const collective_options_t* options,
                               collective_plan_t* plan) {
  if (plan == nullptr) return null_output("collective_all_reduce_init", comm, "output plan handle");
  *plan = nullptr;
  return with_comm("collective_all_reduce_init", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::AllReduceOptions>(options);
    converted.op = static_cast<collective::ReduceOp>(op);
    *plan = collective::capi::issue_plan(
        c.all_reduce_init(send, recv, count, static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_reduce_scatter_async(collective_comm_t comm, const void* send, void* recv,
                                    size_t recv_count, int dtype, int op,
                                    const collective_options_t* options, collective_work_t* work) {
  if (work == nullptr)
    return null_output("collective_reduce_scatter_async", comm, "output work handle");
  *work = nullptr;

  return with_comm("collective_reduce_scatter_async", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ReduceScatterOptions>(options);
    converted.op = static_cast<collective::ReduceOp>(op);
    *work = collective::capi::issue_work(c.reduce_scatter_async(
        send, recv, recv_count, static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_all_gather_async(collective_comm_t comm, const void* send, void* recv,
                                size_t send_count, int dtype, const collective_options_t* options,
                                collective_work_t* work) {
  if (work == nullptr)
    return null_output("collective_all_gather_async", comm, "output work handle");
  *work = nullptr;

  return with_comm("collective_all_gather_async", comm, [&](collective::Communicator& c) {
    *work = collective::capi::issue_work(
        c.all_gather_async(send, recv, send_count, static_cast<collective::DataType>(dtype),
                           to_options<collective::AllGatherOptions>(options)));
  });
}

int collective_broadcast_async(collective_comm_t comm, void* buffer, size_t count, int dtype,
                               int root, const collective_options_t* options,
                               collective_work_t* work) {
  if (work == nullptr) return null_output("collective_broadcast_async", comm, "output work handle");
  *work = nullptr;

  return with_comm("collective_broadcast_async", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::BroadcastOptions>(options);
    converted.root = root;
    *work = collective::capi::issue_work(
        c.broadcast_async(buffer, count, static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_reduce_async(collective_comm_t comm, const void* send, void* recv, size_t count,
                            int dtype, int op, int root, const collective_options_t* options,
                            collective_work_t* work) {
  if (work == nullptr) return null_output("collective_reduce_async", comm, "output work handle");
  *work = nullptr;

  return with_comm("collective_reduce_async", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ReduceOptions>(options);
    converted.op = static_cast<collective::ReduceOp>(op);
    converted.root = root;
    *work = collective::capi::issue_work(
        c.reduce_async(send, recv, count, static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_barrier_async(collective_comm_t comm, const collective_options_t* options,
                             collective_work_t* work) {
  if (work == nullptr) return null_output("collective_barrier_async", comm, "output work handle");
  *work = nullptr;

  return with_comm("collective_barrier_async", comm, [&](collective::Communicator& c) {
    *work = collective::capi::issue_work(
        c.barrier_async(to_options<collective::BarrierOptions>(options)));
  });
}

int collective_all_to_all_async(collective_comm_t comm, const void* send, void* recv, size_t count,
                                int dtype, const collective_options_t* options,
                                collective_work_t* work) {
  if (work == nullptr)
    return null_output("collective_all_to_all_async", comm, "output work handle");
  *work = nullptr;

  return with_comm("collective_all_to_all_async", comm, [&](collective::Communicator& c) {
    *work = collective::capi::issue_work(
        c.all_to_all_async(send, recv, count, static_cast<collective::DataType>(dtype),
                           to_options<collective::AllToAllOptions>(options)));
  });
}

int collective_all_to_all_v_async(collective_comm_t comm, const void* send,
                                  const size_t* send_counts, const size_t* send_displacements,
                                  void* recv, const size_t* recv_counts,
                                  const size_t* recv_displacements, int dtype,
                                  const collective_options_t* options, collective_work_t* work) {
  if (work == nullptr)
    return null_output("collective_all_to_all_v_async", comm, "output work handle");
  *work = nullptr;

  const char* operation = "collective_all_to_all_v_async";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    const auto recv_spans = per_rank(operation, c, recv_counts, "recv_counts");
    const auto recv_places = per_rank(operation, c, recv_displacements, "recv_displacements");
    // In place (send == recv) the send arrays are ignored and may be NULL.
    const bool in_place = send == recv && send != nullptr;
    const auto send_spans = in_place && send_counts == nullptr
                                ? recv_spans
                                : per_rank(operation, c, send_counts, "send_counts");
    const auto send_places = in_place && send_displacements == nullptr
                                 ? recv_places
                                 : per_rank(operation, c, send_displacements, "send_displacements");
    *work = collective::capi::issue_work(
        c.all_to_all_v_async(send, send_spans, send_places, recv, recv_spans, recv_places,
                             static_cast<collective::DataType>(dtype),
                             to_options<collective::AllToAllOptions>(options)));
  });
}

int collective_all_gather_v_async(collective_comm_t comm, const void* send, size_t send_count,
                                  void* recv, const size_t* recv_counts,
                                  const size_t* recv_displacements, int dtype,
                                  const collective_options_t* options, collective_work_t* work) {
  if (work == nullptr)
    return null_output("collective_all_gather_v_async", comm, "output work handle");
  *work = nullptr;

  const char* operation = "collective_all_gather_v_async";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    const auto counts = per_rank(operation, c, recv_counts, "recv_counts");
    const auto places = per_rank(operation, c, recv_displacements, "recv_displacements");
    *work = collective::capi::issue_work(c.all_gather_v_async(
        send, send_count, recv, counts, places, static_cast<collective::DataType>(dtype),
        to_options<collective::AllGatherOptions>(options)));
  });
}

int collective_reduce_scatter_v_async(collective_comm_t comm, const void* send, void* recv,
                                      const size_t* recv_counts, int dtype, int op,
                                      const collective_options_t* options,
                                      collective_work_t* work) {
  if (work == nullptr)
    return null_output("collective_reduce_scatter_v_async", comm, "output work handle");
  *work = nullptr;

  const char* operation = "collective_reduce_scatter_v_async";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ReduceScatterOptions>(options);
    converted.op = static_cast<collective::ReduceOp>(op);
    *work = collective::capi::issue_work(
        c.reduce_scatter_v_async(send, recv, per_rank(operation, c, recv_counts, "recv_counts"),
                                 static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_gather_async(collective_comm_t comm, const void* send, void* recv, size_t send_count,
                            int dtype, int root, const collective_options_t* options,
                            collective_work_t* work) {
  if (work == nullptr) return null_output("collective_gather_async", comm, "output work handle");
  *work = nullptr;

  return with_comm("collective_gather_async", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::GatherOptions>(options);
    converted.root = root;
    *work = collective::capi::issue_work(c.gather_async(
        send, recv, send_count, static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_gather_v_async(collective_comm_t comm, const void* send, size_t send_count,
                              void* recv, const size_t* recv_counts,
                              const size_t* recv_displacements, int dtype, int root,
                              const collective_options_t* options, collective_work_t* work) {
  if (work == nullptr) return null_output("collective_gather_v_async", comm, "output work handle");
  *work = nullptr;

  const char* operation = "collective_gather_v_async";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::GatherOptions>(options);
    converted.root = root;
    // Significant at the root only: elsewhere the arrays may be NULL.
    const bool at_root = c.rank() == root;
    std::span<const std::size_t> counts, places;
    if (at_root) {
      counts = per_rank(operation, c, recv_counts, "recv_counts");
      places = per_rank(operation, c, recv_displacements, "recv_displacements");
    }
    *work = collective::capi::issue_work(c.gather_v_async(send, send_count, recv, counts, places,
                                                          static_cast<collective::DataType>(dtype),
                                                          converted));
  });
}

int collective_scatter_async(collective_comm_t comm, const void* send, void* recv,
                             size_t recv_count, int dtype, int root,
                             const collective_options_t* options, collective_work_t* work) {
  if (work == nullptr) return null_output("collective_scatter_async", comm, "output work handle");
  *work = nullptr;

  return with_comm("collective_scatter_async", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ScatterOptions>(options);
    converted.root = root;
    *work = collective::capi::issue_work(c.scatter_async(
        send, recv, recv_count, static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_scatter_v_async(collective_comm_t comm, const void* send, const size_t* send_counts,
                               const size_t* send_displacements, void* recv, size_t recv_count,
                               int dtype, int root, const collective_options_t* options,
                               collective_work_t* work) {
  if (work == nullptr) return null_output("collective_scatter_v_async", comm, "output work handle");
  *work = nullptr;

  const char* operation = "collective_scatter_v_async";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ScatterOptions>(options);
    converted.root = root;
    const bool at_root = c.rank() == root;
    std::span<const std::size_t> counts, places;
    if (at_root) {
      counts = per_rank(operation, c, send_counts, "send_counts");
      places = per_rank(operation, c, send_displacements, "send_displacements");
    }
    *work = collective::capi::issue_work(c.scatter_v_async(send, counts, places, recv, recv_count,
                                                           static_cast<collective::DataType>(dtype),
                                                           converted));
  });
}

int collective_reduce_scatter_init(collective_comm_t comm, const void* send, void* recv,
                                   size_t recv_count, int dtype, int op,
                                   const collective_options_t* options, collective_plan_t* plan) {
  if (plan == nullptr)
    return null_output("collective_reduce_scatter_init", comm, "output plan handle");
  *plan = nullptr;

  return with_comm("collective_reduce_scatter_init", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ReduceScatterOptions>(options);
    converted.op = static_cast<collective::ReduceOp>(op);
    *plan = collective::capi::issue_plan(c.reduce_scatter_init(
        send, recv, recv_count, static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_all_gather_init(collective_comm_t comm, const void* send, void* recv,
                               size_t send_count, int dtype, const collective_options_t* options,
                               collective_plan_t* plan) {
  if (plan == nullptr) return null_output("collective_all_gather_init", comm, "output plan handle");
  *plan = nullptr;

  return with_comm("collective_all_gather_init", comm, [&](collective::Communicator& c) {
    *plan = collective::capi::issue_plan(
        c.all_gather_init(send, recv, send_count, static_cast<collective::DataType>(dtype),
                          to_options<collective::AllGatherOptions>(options)));
  });
}

int collective_broadcast_init(collective_comm_t comm, void* buffer, size_t count, int dtype,
                              int root, const collective_options_t* options,
                              collective_plan_t* plan) {
  if (plan == nullptr) return null_output("collective_broadcast_init", comm, "output plan handle");
  *plan = nullptr;

  return with_comm("collective_broadcast_init", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::BroadcastOptions>(options);
    converted.root = root;
    *plan = collective::capi::issue_plan(
        c.broadcast_init(buffer, count, static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_reduce_init(collective_comm_t comm, const void* send, void* recv, size_t count,
                           int dtype, int op, int root, const collective_options_t* options,
                           collective_plan_t* plan) {
  if (plan == nullptr) return null_output("collective_reduce_init", comm, "output plan handle");
  *plan = nullptr;

  return with_comm("collective_reduce_init", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ReduceOptions>(options);
    converted.op = static_cast<collective::ReduceOp>(op);
    converted.root = root;
    *plan = collective::capi::issue_plan(
        c.reduce_init(send, recv, count, static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_barrier_init(collective_comm_t comm, const collective_options_t* options,
                            collective_plan_t* plan) {
  if (plan == nullptr) return null_output("collective_barrier_init", comm, "output plan handle");
  *plan = nullptr;

  return with_comm("collective_barrier_init", comm, [&](collective::Communicator& c) {
    *plan = collective::capi::issue_plan(
        c.barrier_init(to_options<collective::BarrierOptions>(options)));
  });
}

int collective_all_to_all_init(collective_comm_t comm, const void* send, void* recv, size_t count,
                               int dtype, const collective_options_t* options,
                               collective_plan_t* plan) {
  if (plan == nullptr) return null_output("collective_all_to_all_init", comm, "output plan handle");
  *plan = nullptr;

  return with_comm("collective_all_to_all_init", comm, [&](collective::Communicator& c) {
    *plan = collective::capi::issue_plan(
        c.all_to_all_init(send, recv, count, static_cast<collective::DataType>(dtype),
                          to_options<collective::AllToAllOptions>(options)));
  });
}

int collective_all_to_all_v_init(collective_comm_t comm, const void* send,
                                 const size_t* send_counts, const size_t* send_displacements,
                                 void* recv, const size_t* recv_counts,
                                 const size_t* recv_displacements, int dtype,
                                 const collective_options_t* options, collective_plan_t* plan) {
  if (plan == nullptr)
    return null_output("collective_all_to_all_v_init", comm, "output plan handle");
  *plan = nullptr;

  const char* operation = "collective_all_to_all_v_init";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    const auto recv_spans = per_rank(operation, c, recv_counts, "recv_counts");
    const auto recv_places = per_rank(operation, c, recv_displacements, "recv_displacements");
    // In place (send == recv) the send arrays are ignored and may be NULL.
    const bool in_place = send == recv && send != nullptr;
    const auto send_spans = in_place && send_counts == nullptr
                                ? recv_spans
                                : per_rank(operation, c, send_counts, "send_counts");
    const auto send_places = in_place && send_displacements == nullptr
                                 ? recv_places
                                 : per_rank(operation, c, send_displacements, "send_displacements");
    *plan = collective::capi::issue_plan(
        c.all_to_all_v_init(send, send_spans, send_places, recv, recv_spans, recv_places,
                            static_cast<collective::DataType>(dtype),
                            to_options<collective::AllToAllOptions>(options)));
  });
}

int collective_all_gather_v_init(collective_comm_t comm, const void* send, size_t send_count,
                                 void* recv, const size_t* recv_counts,
                                 const size_t* recv_displacements, int dtype,
                                 const collective_options_t* options, collective_plan_t* plan) {
  if (plan == nullptr)
    return null_output("collective_all_gather_v_init", comm, "output plan handle");
  *plan = nullptr;

  const char* operation = "collective_all_gather_v_init";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    const auto counts = per_rank(operation, c, recv_counts, "recv_counts");
    const auto places = per_rank(operation, c, recv_displacements, "recv_displacements");
    *plan = collective::capi::issue_plan(c.all_gather_v_init(
        send, send_count, recv, counts, places, static_cast<collective::DataType>(dtype),
        to_options<collective::AllGatherOptions>(options)));
  });
}

int collective_reduce_scatter_v_init(collective_comm_t comm, const void* send, void* recv,
                                     const size_t* recv_counts, int dtype, int op,
                                     const collective_options_t* options, collective_plan_t* plan) {
  if (plan == nullptr)
    return null_output("collective_reduce_scatter_v_init", comm, "output plan handle");
  *plan = nullptr;

  const char* operation = "collective_reduce_scatter_v_init";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ReduceScatterOptions>(options);
    converted.op = static_cast<collective::ReduceOp>(op);
    *plan = collective::capi::issue_plan(
        c.reduce_scatter_v_init(send, recv, per_rank(operation, c, recv_counts, "recv_counts"),
                                static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_gather_init(collective_comm_t comm, const void* send, void* recv, size_t send_count,
                           int dtype, int root, const collective_options_t* options,
                           collective_plan_t* plan) {
  if (plan == nullptr) return null_output("collective_gather_init", comm, "output plan handle");
  *plan = nullptr;

  return with_comm("collective_gather_init", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::GatherOptions>(options);
    converted.root = root;
    *plan = collective::capi::issue_plan(
        c.gather_init(send, recv, send_count, static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_gather_v_init(collective_comm_t comm, const void* send, size_t send_count,
                             void* recv, const size_t* recv_counts,
                             const size_t* recv_displacements, int dtype, int root,
                             const collective_options_t* options, collective_plan_t* plan) {
  if (plan == nullptr) return null_output("collective_gather_v_init", comm, "output plan handle");
  *plan = nullptr;

  const char* operation = "collective_gather_v_init";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::GatherOptions>(options);
    converted.root = root;
    // Significant at the root only: elsewhere the arrays may be NULL.
    const bool at_root = c.rank() == root;
    std::span<const std::size_t> counts, places;
    if (at_root) {
      counts = per_rank(operation, c, recv_counts, "recv_counts");
      places = per_rank(operation, c, recv_displacements, "recv_displacements");
    }
    *plan = collective::capi::issue_plan(c.gather_v_init(send, send_count, recv, counts, places,
                                                         static_cast<collective::DataType>(dtype),
                                                         converted));
  });
}

int collective_scatter_init(collective_comm_t comm, const void* send, void* recv, size_t recv_count,
                            int dtype, int root, const collective_options_t* options,
                            collective_plan_t* plan) {
  if (plan == nullptr) return null_output("collective_scatter_init", comm, "output plan handle");
  *plan = nullptr;

  return with_comm("collective_scatter_init", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ScatterOptions>(options);
    converted.root = root;
    *plan = collective::capi::issue_plan(c.scatter_init(
        send, recv, recv_count, static_cast<collective::DataType>(dtype), converted));
  });
}

int collective_scatter_v_init(collective_comm_t comm, const void* send, const size_t* send_counts,
                              const size_t* send_displacements, void* recv, size_t recv_count,
                              int dtype, int root, const collective_options_t* options,
                              collective_plan_t* plan) {
  if (plan == nullptr) return null_output("collective_scatter_v_init", comm, "output plan handle");
  *plan = nullptr;

  const char* operation = "collective_scatter_v_init";
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::ScatterOptions>(options);
    converted.root = root;
    const bool at_root = c.rank() == root;
    std::span<const std::size_t> counts, places;
    if (at_root) {
      counts = per_rank(operation, c, send_counts, "send_counts");
      places = per_rank(operation, c, send_displacements, "send_displacements");
    }
    *plan = collective::capi::issue_plan(c.scatter_v_init(send, counts, places, recv, recv_count,
                                                          static_cast<collective::DataType>(dtype),
                                                          converted));
  });
}

int collective_send(collective_comm_t comm, const void* buffer, size_t count, int dtype, int peer,
                    int tag, const collective_options_t* options) {
  return with_comm("collective_send", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::PointToPointOptions>(options);
    converted.tag = tag;
    c.send(buffer, count, static_cast<collective::DataType>(dtype), peer, converted);
  });
}

int collective_recv(collective_comm_t comm, void* buffer, size_t count, int dtype, int peer,
                    int tag, const collective_options_t* options) {
  return with_comm("collective_recv", comm, [&](collective::Communicator& c) {
    auto converted = to_options<collective::PointToPointOptions>(options);
    converted.tag = tag;
    c.recv(buffer, count, static_cast<collective::DataType>(dtype), peer, converted);
  });
}

int collective_comm_choose_algorithm(collective_comm_t comm, int kind, size_t count, int dtype,
                                     int requested, int* algorithm) {
  const char* operation = "collective_comm_choose_algorithm";
  if (algorithm == nullptr) return null_output(operation, comm, "algorithm");
  if (!collective::is_collective_kind(kind)) {  // the table's rows (c_kinds.cc)
    return fail_argument(operation, rank_of(comm),
                         "unknown collective kind " + std::to_string(kind));
  }
  return with_comm(operation, comm, [&](collective::Communicator& c) {
    *algorithm = static_cast<int>(c.choose_algorithm(
        static_cast<collective::CollectiveKind>(kind), count,
        static_cast<collective::DataType>(dtype), static_cast<collective::Algorithm>(requested)));
  });
}

int collective_comm_last_algorithm(collective_comm_t comm, int* algorithm) {
  if (algorithm == nullptr) return null_output("collective_comm_last_algorithm", comm, "algorithm");
  return with_comm("collective_comm_last_algorithm", comm, [&](collective::Communicator& c) {
    *algorithm = static_cast<int>(c.last_algorithm());
  });
}

int collective_comm_sequence_number(collective_comm_t comm, uint64_t* sequence) {
  if (sequence == nullptr) return null_output("collective_comm_sequence_number", comm, "sequence");
  return with_comm("collective_comm_sequence_number", comm,
                   [&](collective::Communicator& c) { *sequence = c.sequence_number(); });
}

int collective_comm_abort(collective_comm_t comm, const char* reason) {
  return with_comm("collective_comm_abort", comm,
                   [&](collective::Communicator& c) { c.abort(reason != nullptr ? reason : ""); });
}

int collective_comm_aborted(collective_comm_t comm, int* aborted) {
  if (aborted == nullptr) return null_output("collective_comm_aborted", comm, "aborted");
  return with_comm("collective_comm_aborted", comm,
                   [&](collective::Communicator& c) { *aborted = c.aborted() ? 1 : 0; });
}

}  // extern "C"
