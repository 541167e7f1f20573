#include "algorithms/mpi_passthrough.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string_view>
#include <vector>

#include "transport/mpi/mpi_datatypes.h"
#include "core/env_params.h"
#include "core/log.h"
#include "core/mpi_check.h"
#include "core/mpi_thread_level.h"
#include "core/wait_guard.h"
#include "kernels/float32_partials.h"
#include "kernels/reduce_kernels.h"

namespace collective::internal {
namespace {

// MPICH 4.0 (Debian's 4.0.2, ch4) crashes in MPI_Reduce given MPI_IN_PLACE
// at a root other than 0 from a few KiB on: it reads MPI_IN_PLACE as a
// buffer (a plain C program does the same). Under it, the root's in-place
// reduce hands MPI a copy of its buffer as the send buffer instead: one
// copy of the root's data, a rule documented in docs/embedding.md.
bool mpi_reduce_in_place_at_nonzero_root_crashes() {
  static const bool crashes = [] {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int length = 0;
    const MpiLock lock;
    if (MPI_Get_library_version(version, &length) != MPI_SUCCESS) return false;
    const std::string_view text(version, static_cast<std::size_t>(std::max(length, 0)));
    const bool affected = text.starts_with("MPICH Version:\t4.0");
    if (affected) {
      COLLECTIVE_LOG(kInfo,
                     "mpi algorithm: MPICH 4.0's MPI_Reduce crashes with MPI_IN_PLACE at "
                     "a root other than 0; such a root passes a copy of its buffer instead");
    }
    return affected;
  }();
  return crashes;
}

class MpiCall {
 public:
  MpiCall(const Request& request, CommunicatorState& state)
      : request_(request),
        state_(state),
        element_(request.element_bytes()),
        datatype_(mpi_datatype(request.type)),
        op_(mpi_op(request.type, request.op)),
        piece_(std::max<std::size_t>(
            1, std::min<std::size_t>(env_params().max_message_bytes / element_, INT_MAX))) {}

  void all_reduce() {
    const auto* send = static_cast<const std::byte*>(request_.send);
    auto* recv = static_cast<std::byte*>(request_.recv);
    for_each_piece(request_.count, [&](std::size_t first, int n) {
      const void* source = request_.in_place() ? MPI_IN_PLACE : send + first * element_;
      collective_call(
          "MPI_Allreduce",
          [&] {
            return MPI_Allreduce(source, recv + first * element_, n, datatype_, op_, state_.comm);
          },
          [&](MPI_Request* r) {
            return MPI_Iallreduce(source, recv + first * element_, n, datatype_, op_, state_.comm,
                                  r);
          });
    });
    finish_mean(recv, request_.count);
  }

  void reduce() {
    const auto* send = static_cast<const std::byte*>(request_.send);
    auto* recv = static_cast<std::byte*>(request_.recv);
    const bool root = state_.rank == request_.root;
    const bool copy_in_place = root && request_.in_place() && request_.root != 0 &&
                               request_.count > 0 && mpi_reduce_in_place_at_nonzero_root_crashes();
    std::vector<std::byte> copy;
    for_each_piece(request_.count, [&](std::size_t first, int n) {
      const void* source = root && request_.in_place() ? MPI_IN_PLACE : send + first * element_;
      void* target = root ? recv + first * element_ : nullptr;
      if (copy_in_place) {
        const std::byte* piece = recv + first * element_;
        copy.assign(piece, piece + static_cast<std::size_t>(n) * element_);
        source = copy.data();
      }
      collective_call(
          "MPI_Reduce",
          [&] { return MPI_Reduce(source, target, n, datatype_, op_, request_.root, state_.comm); },
          [&](MPI_Request* r) {
            return MPI_Ireduce(source, target, n, datatype_, op_, request_.root, state_.comm, r);
          });
    });
    if (root) finish_mean(recv, request_.count);
  }

  void broadcast() {
    auto* buffer = static_cast<std::byte*>(request_.recv);
    for_each_piece(request_.count, [&](std::size_t first, int n) {
      void* piece = buffer + first * element_;
      collective_call(
          "MPI_Bcast", [&] { return MPI_Bcast(piece, n, datatype_, request_.root, state_.comm); },
          [&](MPI_Request* r) {
            return MPI_Ibcast(piece, n, datatype_, request_.root, state_.comm, r);
          });
    });
  }

  void reduce_scatter() {
    const auto* send = static_cast<const std::byte*>(request_.send);
    auto* recv = static_cast<std::byte*>(request_.recv);
    const std::size_t block = request_.count;
    if (block <= piece_) {
      const bool in_place = send + state_.rank * block * element_ == recv;
      // In place, MPI wants the whole input in recv, which is not ours to
      // widen: hand MPI the input buffer and a scratch result instead.
      std::byte* target = in_place ? state_.scratch_work.get(block * element_) : recv;
      const int n = static_cast<int>(block);
      collective_call(
          "MPI_Reduce_scatter_block",
          [&] { return MPI_Reduce_scatter_block(send, target, n, datatype_, op_, state_.comm); },
          [&](MPI_Request* r) {
            return MPI_Ireduce_scatter_block(send, target, n, datatype_, op_, state_.comm, r);
          });
      if (in_place) std::memcpy(recv, target, block * element_);
    } else {
      // Blocks too large for one call: gather piece k of every block into a
      // contiguous scratch input, then reduce-scatter that.
      const auto p = static_cast<std::size_t>(state_.size);
      for_each_piece(block, [&](std::size_t first, int n) {
        const std::size_t piece_bytes = static_cast<std::size_t>(n) * element_;
        std::byte* staging = state_.scratch_work.get(p * piece_bytes + piece_bytes);
        for (std::size_t b = 0; b < p; ++b) {
          std::memcpy(staging + b * piece_bytes, send + (b * block + first) * element_,
                      piece_bytes);
        }
        std::byte* result = staging + p * piece_bytes;
        collective_call(
            "MPI_Reduce_scatter_block",
            [&] {
              return MPI_Reduce_scatter_block(staging, result, n, datatype_, op_, state_.comm);
            },
            [&](MPI_Request* r) {
              return MPI_Ireduce_scatter_block(staging, result, n, datatype_, op_, state_.comm, r);
            });
        std::memcpy(recv + first * element_, result, piece_bytes);
      });
    }
    finish_mean(recv, block);
  }

  void all_gather() {
    const auto* send = static_cast<const std::byte*>(request_.send);
    auto* recv = static_cast<std::byte*>(request_.recv);
    const std::size_t block = request_.count;
    const bool in_place = recv + state_.rank * block * element_ == send;
    if (block <= piece_) {
      const void* source = in_place ? MPI_IN_PLACE : send;
      const int n = static_cast<int>(block);
      collective_call(
          "MPI_Allgather",
          [&] { return MPI_Allgather(source, n, datatype_, recv, n, datatype_, state_.comm); },
          [&](MPI_Request* r) {
            return MPI_Iallgather(source, n, datatype_, recv, n, datatype_, state_.comm, r);
          });
      return;
    }
    const auto p = static_cast<std::size_t>(state_.size);
    for_each_piece(block, [&](std::size_t first, int n) {
      const std::size_t piece_bytes = static_cast<std::size_t>(n) * element_;
      std::byte* staging = state_.scratch_work.get(p * piece_bytes);
      const void* source = send + first * element_;
      collective_call(
          "MPI_Allgather",
          [&] { return MPI_Allgather(source, n, datatype_, staging, n, datatype_, state_.comm); },
          [&](MPI_Request* r) {
            return MPI_Iallgather(source, n, datatype_, staging, n, datatype_, state_.comm, r);
          });
      for (std::size_t b = 0; b < p; ++b) {
        std::memcpy(recv + (b * block + first) * element_, staging + b * piece_bytes, piece_bytes);
      }
    });
  }

  void barrier() {
    collective_call(
        "MPI_Barrier", [&] { return MPI_Barrier(state_.comm); },
        [&](MPI_Request* r) { return MPI_Ibarrier(state_.comm, r); });
  }

 private:
  // At MPI_THREAD_MULTIPLE, MPI's blocking collective. Below it the
  // library holds its MPI lock around each MPI call, and a blocking
  // collective under the lock would stop this rank's other threads, whose
  // peers may be what the collective waits for (core/mpi_thread_level.h):
  // the non-blocking form, tested under the lock, yielding between tests
  // under the wait policy (so also bounded by the call's timeout).
  template <typename Blocking, typename Start>
  void collective_call(const char* call, Blocking blocking, Start start) {
    if (!mpi_calls_serialized()) return check(blocking(), call);
    MPI_Request pending = MPI_REQUEST_NULL;
    {
      const MpiLock lock;
      check(start(&pending), call);
    }
    WaitGuard guard(request_, state_, "mpi");
    int done = 0;
    while (true) {
      {
        const MpiLock lock;
        check(MPI_Test(&pending, &done, MPI_STATUS_IGNORE), "MPI_Test");
      }
      if (done) return;
      guard.idle([&] { return WaitTarget{{}, std::string(call) + " on every rank"}; });
    }
  }

  template <typename Body>
  void for_each_piece(std::size_t count, Body body) {
    for (std::size_t first = 0; first < count; first += piece_) {
      body(first, static_cast<int>(std::min(piece_, count - first)));
    }
  }

  void finish_mean(void* buffer, std::size_t count) {
    if (request_.op == ReduceOp::kMean) divide_buffer(buffer, count, request_.type, state_.size);
  }

  void check(int rc, const char* call) {
    if (rc != MPI_SUCCESS) check_mpi(rc, call, request_.label(), state_.rank);
  }

  const Request& request_;
  CommunicatorState& state_;
  const std::size_t element_;
  const MPI_Datatype datatype_;
  const MPI_Op op_;
  const std::size_t piece_;  // elements per MPI call
};

bool is_reduction(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter ||
         kind == CollectiveKind::kReduce;
}

// float16 and bfloat16 SUM, MEAN and PROD keep their partials in float32
// (kernels/float32_partials.h): MPI reduces a float32 copy with its own
// MPI_FLOAT op, and each rank divides (MEAN) and rounds its result once.
// Two ranks' SUM or PROD combine once, which the 16-bit user op rounds
// once already; their MEAN would round the sum before the division.
bool reduces_float32_copy(const Request& request, const CommunicatorState& state) {
  return is_reduction(request.kind) && keeps_float32_partials(request.type, request.op) &&
         (state.size > 2 || (state.size == 2 && request.op == ReduceOp::kMean));
}

void run_on_float32_copy(const Request& request, CommunicatorState& state) {
  const auto p = static_cast<std::size_t>(state.size);
  const std::size_t in_count =
      request.kind == CollectiveKind::kReduceScatter ? request.count * p : request.count;
  const std::size_t out_count = request.count;
  float* wide_in =
      reinterpret_cast<float*>(state.scratch_in.get((in_count + out_count) * sizeof(float)));
  float* wide_out = wide_in + in_count;
  widen_to_float32(wide_in, request.send, in_count, request.type);
  Request wide = request;
  wide.type = DataType::kFloat32;
  wide.op = request.op == ReduceOp::kMean ? ReduceOp::kSum : request.op;
  wide.send = wide_in;
  wide.recv = wide_out;
  MpiCall call(wide, state);
  if (request.kind == CollectiveKind::kAllReduce) call.all_reduce();
  if (request.kind == CollectiveKind::kReduceScatter) call.reduce_scatter();
  if (request.kind == CollectiveKind::kReduce) call.reduce();
  if (request.kind != CollectiveKind::kReduce || state.rank == request.root) {
    round_from_float32(request.recv, wide_out, out_count, request.type,
                       request.op == ReduceOp::kMean ? state.size : 1);
  }
}

}  // namespace

Support MpiPassthroughAlgorithm::supports(const Request& request,
                                          const CommunicatorState& state) const {
  (void)state;
  if (request.memory == MemoryKind::kDevice) {
    return Support::no(
        "mpi passthrough serves host buffers only (this Open MPI is not CUDA-aware)");
  }
  if (request.deterministic) {
    // MPI's reductions combine ranks' contributions in whatever order its
    // own algorithm (chosen by message size) takes.
    return Support::no(
        "mpi passthrough cannot be deterministic: MPI does not fix the order in "
        "which it combines the ranks' contributions (use ring, "
        "recursive_doubling or shared_memory)");
  }
  return Support::yes();
}

void MpiPassthroughAlgorithm::run(const Request& request, CommunicatorState& state) const {
  if (reduces_float32_copy(request, state)) return run_on_float32_copy(request, state);
  MpiCall call(request, state);
  switch (request.kind) {
    case CollectiveKind::kAllReduce: return call.all_reduce();
    case CollectiveKind::kReduceScatter: return call.reduce_scatter();
    case CollectiveKind::kAllGather: return call.all_gather();
    case CollectiveKind::kBroadcast: return call.broadcast();
    case CollectiveKind::kReduce: return call.reduce();
    case CollectiveKind::kBarrier: return call.barrier();
  }
}

}  // namespace collective::internal
