#include "algorithms/mpi_passthrough.h"

#include <array>
#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>
#include <string_view>
#include <vector>

#include "collective/in_tree/collectives.h"
#include "transport/mpi/mpi_datatypes.h"
#include "core/blocking_call_watch.h"
#include "core/env_params.h"
#include "core/log.h"
#include "core/mpi_check.h"
#include "core/mpi_thread_level.h"
#include "core/wait_guard.h"
#include "kernels/float32_partials.h"
#include "kernels/reduce_kernels.h"
#include "kernels/plain_copy.h"

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
            1, std::min<std::size_t>(env_params().max_message_bytes / element_, INT_MAX))),
        size_(static_cast<std::size_t>(state.size)) {}

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
      if (in_place) plain_copy(recv, target, block * element_);
    } else {
      // Blocks too large for one call: gather piece k of every block into a
      // contiguous scratch input, then reduce-scatter that.
      const auto p = static_cast<std::size_t>(state_.size);
      for_each_piece(block, [&](std::size_t first, int n) {
        const std::size_t piece_bytes = static_cast<std::size_t>(n) * element_;
        std::byte* staging = state_.scratch_work.get(p * piece_bytes + piece_bytes);
        for (std::size_t b = 0; b < p; ++b) {
          plain_copy(staging + b * piece_bytes, send + (b * block + first) * element_, piece_bytes);
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
        plain_copy(recv + first * element_, result, piece_bytes);
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
        plain_copy(recv + (b * block + first) * element_, staging + b * piece_bytes, piece_bytes);
      }
    });
  }

  // In place, all_to_all(v) sends from a copy of the buffer rather than
  // MPI_IN_PLACE: Open MPI 4.1's MPI_Ialltoallv (what calls below
  // MPI_THREAD_MULTIPLE use) sends in-place blocks to the wrong ranks at 4
  // ranks, and MPI's own in-place forms copy the buffer anyway.
  const std::byte* copy_of_recv(std::size_t elements) {
    std::byte* copy = state_.scratch_in.get(elements * element_);
    if (elements > 0) plain_copy(copy, request_.recv, elements * element_);
    return copy;
  }

  void all_to_all() {
    const std::size_t block = request_.count;
    const void* send = request_.in_place() ? copy_of_recv(size_ * block) : request_.send;
    if (block <= piece_) {
      const int n = static_cast<int>(block);
      collective_call(
          "MPI_Alltoall",
          [&] {
            return MPI_Alltoall(send, n, datatype_, request_.recv, n, datatype_, state_.comm);
          },
          [&](MPI_Request* r) {
            return MPI_Ialltoall(send, n, datatype_, request_.recv, n, datatype_, state_.comm, r);
          });
      return;
    }
    std::vector<Block> blocks(size_);
    for (std::size_t q = 0; q < size_; ++q) blocks[q] = Block{q * block, block};
    exchange_in_rounds("MPI_Alltoallw", send, blocks, blocks, rounds_for(block));
  }

  void all_to_all_v() {
    const bool in_place = request_.in_place();
    const auto send_counts = in_place ? request_.recv_counts : request_.send_counts;
    const auto send_displs = in_place ? request_.recv_displacements : request_.send_displacements;
    std::vector<Block> to(size_);
    std::vector<Block> from(size_);
    std::size_t extent = 0;
    for (std::size_t q = 0; q < size_; ++q) {
      to[q] = Block{send_displs[q], send_counts[q]};
      from[q] = Block{request_.recv_displacements[q], request_.recv_counts[q]};
      if (from[q].count > 0) extent = std::max(extent, from[q].displacement + from[q].count);
    }
    const void* send = in_place ? copy_of_recv(extent) : request_.send;
    const std::size_t rounds = agreed_rounds(to, from);
    if (rounds == 0) {
      std::vector<int> sc, sd, rc, rd;
      to_ints(to, sc, sd);
      to_ints(from, rc, rd);
      collective_call(
          "MPI_Alltoallv",
          [&] {
            return MPI_Alltoallv(send, sc.data(), sd.data(), datatype_, request_.recv, rc.data(),
                                 rd.data(), datatype_, state_.comm);
          },
          [&](MPI_Request* r) {
            return MPI_Ialltoallv(send, sc.data(), sd.data(), datatype_, request_.recv, rc.data(),
                                  rd.data(), datatype_, state_.comm, r);
          });
      return;
    }
    exchange_in_rounds("MPI_Alltoallw", send, to, from, rounds);
  }

  void all_gather_v() {
    const auto own = static_cast<std::size_t>(state_.rank);
    const bool in_place = request_.in_place(state_.rank);
    std::vector<Block> to(size_);
    std::vector<Block> from(size_);
    for (std::size_t q = 0; q < size_; ++q) {
      to[q] = Block{0, request_.count};
      from[q] = Block{request_.recv_displacements[q], request_.recv_counts[q]};
    }
    if (in_place) to[own] = from[own] = Block{};
    const std::size_t rounds = agreed_rounds(to, from);
    if (rounds == 0) {
      std::vector<int> rc, rd;
      to_ints(from, rc, rd);
      if (in_place) {  // MPI's in-place form keeps the own block where recv has it
        rc[own] = static_cast<int>(request_.recv_counts[own]);
        rd[own] = static_cast<int>(request_.recv_displacements[own]);
      }
      const void* source = in_place ? MPI_IN_PLACE : request_.send;
      const int n = static_cast<int>(request_.count);
      collective_call(
          "MPI_Allgatherv",
          [&] {
            return MPI_Allgatherv(source, n, datatype_, request_.recv, rc.data(), rd.data(),
                                  datatype_, state_.comm);
          },
          [&](MPI_Request* r) {
            return MPI_Iallgatherv(source, n, datatype_, request_.recv, rc.data(), rd.data(),
                                   datatype_, state_.comm, r);
          });
      return;
    }
    exchange_in_rounds("MPI_Alltoallw", request_.send, to, from, rounds);
  }

  void gather(bool vector) {
    const bool root = state_.rank == request_.root;
    const bool in_place = request_.in_place(state_.rank);
    const auto root_index = static_cast<std::size_t>(request_.root);
    std::vector<Block> to(size_);
    std::vector<Block> from(size_);
    to[root_index] = Block{0, request_.count};
    for (std::size_t q = 0; root && q < size_; ++q) {
      from[q] = vector ? Block{request_.recv_displacements[q], request_.recv_counts[q]}
                       : Block{q * request_.count, request_.count};
    }
    if (in_place) to[root_index] = from[root_index] = Block{};
    const std::size_t rounds = vector ? agreed_rounds(to, from)
                                      : (request_.count <= piece_ ? 0 : rounds_for(request_.count));
    if (rounds > 0) return exchange_in_rounds("MPI_Alltoallw", request_.send, to, from, rounds);
    const void* source = in_place ? MPI_IN_PLACE : request_.send;
    const int n = static_cast<int>(request_.count);
    void* target = root ? request_.recv : nullptr;
    if (!vector) {
      collective_call(
          "MPI_Gather",
          [&] {
            return MPI_Gather(source, n, datatype_, target, n, datatype_, request_.root,
                              state_.comm);
          },
          [&](MPI_Request* r) {
            return MPI_Igather(source, n, datatype_, target, n, datatype_, request_.root,
                               state_.comm, r);
          });
      return;
    }
    std::vector<int> rc, rd;
    if (root) {
      to_ints(from, rc, rd);
      if (in_place) {
        rc[root_index] = static_cast<int>(request_.recv_counts[root_index]);
        rd[root_index] = static_cast<int>(request_.recv_displacements[root_index]);
      }
    }
    collective_call(
        "MPI_Gatherv",
        [&] {
          return MPI_Gatherv(source, n, datatype_, target, rc.data(), rd.data(), datatype_,
                             request_.root, state_.comm);
        },
        [&](MPI_Request* r) {
          return MPI_Igatherv(source, n, datatype_, target, rc.data(), rd.data(), datatype_,
                              request_.root, state_.comm, r);
        });
  }

  void scatter(bool vector) {
    const bool root = state_.rank == request_.root;
    const bool in_place = request_.in_place(state_.rank);
    const auto root_index = static_cast<std::size_t>(request_.root);
    std::vector<Block> to(size_);
    std::vector<Block> from(size_);
    from[root_index] = Block{0, request_.count};
    for (std::size_t q = 0; root && q < size_; ++q) {
      to[q] = vector ? Block{request_.send_displacements[q], request_.send_counts[q]}
                     : Block{q * request_.count, request_.count};
    }
    if (in_place) to[root_index] = from[root_index] = Block{};
    const std::size_t rounds = vector ? agreed_rounds(to, from)
                                      : (request_.count <= piece_ ? 0 : rounds_for(request_.count));
    if (rounds > 0) return exchange_in_rounds("MPI_Alltoallw", request_.send, to, from, rounds);
    void* target = in_place ? MPI_IN_PLACE : request_.recv;
    const void* source = root ? request_.send : nullptr;
    const int n = static_cast<int>(request_.count);
    if (!vector) {
      collective_call(
          "MPI_Scatter",
          [&] {
            return MPI_Scatter(source, n, datatype_, target, n, datatype_, request_.root,
                               state_.comm);
          },
          [&](MPI_Request* r) {
            return MPI_Iscatter(source, n, datatype_, target, n, datatype_, request_.root,
                                state_.comm, r);
          });
      return;
    }
    std::vector<int> sc, sd;
    if (root) {
      to_ints(to, sc, sd);
      if (in_place) {
        sc[root_index] = static_cast<int>(request_.send_counts[root_index]);
        sd[root_index] = static_cast<int>(request_.send_displacements[root_index]);
      }
    }
    collective_call(
        "MPI_Scatterv",
        [&] {
          return MPI_Scatterv(source, sc.data(), sd.data(), datatype_, target, n, datatype_,
                              request_.root, state_.comm);
        },
        [&](MPI_Request* r) {
          return MPI_Iscatterv(source, sc.data(), sd.data(), datatype_, target, n, datatype_,
                               request_.root, state_.comm, r);
        });
  }

  // MPI_Reduce_scatter in pieces of at most piece_ elements per block:
  // piece k of every block is staged contiguously, reduced and scattered.
  // In place, MPI would want the whole input in recv: the input stays in
  // send and the result goes through scratch, as for reduce_scatter.
  void reduce_scatter_v() {
    const auto* send = static_cast<const std::byte*>(request_.send);
    auto* recv = static_cast<std::byte*>(request_.recv);
    const auto counts = request_.recv_counts;
    std::size_t largest = 0;
    std::vector<std::size_t> offsets(size_);
    std::size_t total = 0;
    for (std::size_t q = 0; q < size_; ++q) {
      offsets[q] = total;
      total += counts[q];
      largest = std::max(largest, counts[q]);
    }
    const std::size_t own = counts[static_cast<std::size_t>(state_.rank)];
    const bool in_place = request_.in_place(state_.rank);
    if (largest <= piece_) {
      std::vector<int> rc(size_);
      for (std::size_t q = 0; q < size_; ++q) rc[q] = static_cast<int>(counts[q]);
      std::byte* target = in_place ? state_.scratch_work.get(own * element_) : recv;
      collective_call(
          "MPI_Reduce_scatter",
          [&] { return MPI_Reduce_scatter(send, target, rc.data(), datatype_, op_, state_.comm); },
          [&](MPI_Request* r) {
            return MPI_Ireduce_scatter(send, target, rc.data(), datatype_, op_, state_.comm, r);
          });
      if (in_place && own > 0) plain_copy(recv, target, own * element_);
    } else {
      std::vector<int> rc(size_);
      for (std::size_t first = 0; first < largest; first += piece_) {
        std::size_t staged = 0;
        for (std::size_t q = 0; q < size_; ++q) {
          const std::size_t n = counts[q] > first ? std::min(piece_, counts[q] - first) : 0;
          rc[q] = static_cast<int>(n);
          staged += n;
        }
        const auto mine = static_cast<std::size_t>(rc[static_cast<std::size_t>(state_.rank)]);
        std::byte* staging = state_.scratch_work.get((staged + mine) * element_);
        std::size_t at = 0;
        for (std::size_t q = 0; q < size_; ++q) {
          const auto n = static_cast<std::size_t>(rc[q]);
          plain_copy(staging + at * element_, send + (offsets[q] + first) * element_, n * element_);
          at += n;
        }
        std::byte* result = staging + staged * element_;
        collective_call(
            "MPI_Reduce_scatter",
            [&] {
              return MPI_Reduce_scatter(staging, result, rc.data(), datatype_, op_, state_.comm);
            },
            [&](MPI_Request* r) {
              return MPI_Ireduce_scatter(staging, result, rc.data(), datatype_, op_, state_.comm,
                                         r);
            });
        if (mine > 0) plain_copy(recv + first * element_, result, mine * element_);
      }
    }
    finish_mean(recv, own);
  }

  void barrier() {
    collective_call(
        "MPI_Barrier", [&] { return MPI_Barrier(state_.comm); },
        [&](MPI_Request* r) { return MPI_Ibarrier(state_.comm, r); });
  }

 private:
  // One peer's block of a buffer, in elements.
  struct Block {
    std::size_t displacement = 0;
    std::size_t count = 0;
  };

  std::size_t rounds_for(std::size_t count) const { return (count + piece_ - 1) / piece_; }

  // The v-forms' layouts differ by rank, so whether MPI's v-call can take
  // them (every count within a piece, every displacement an int) is agreed
  // on by an MPI_Allreduce first. 0: it can; else the rounds of
  // exchange_in_rounds that the largest block needs.
  std::size_t agreed_rounds(const std::vector<Block>& to, const std::vector<Block>& from) {
    std::uint64_t rounds = 0;
    bool pieces = false;
    for (const auto* side : {&to, &from}) {
      for (const Block& block : *side) {
        rounds = std::max<std::uint64_t>(rounds, rounds_for(block.count));
        pieces |= block.count > piece_ || block.displacement > static_cast<std::size_t>(INT_MAX);
      }
    }
    // One MPI_MAX over both: whether any rank needs pieces, and the rounds
    // the largest block anywhere needs (every rank runs that many).
    std::uint64_t mine[2] = {pieces ? 1u : 0u, rounds};
    std::uint64_t agreed[2] = {0, 0};
    collective_call(
        "MPI_Allreduce",
        [&] { return MPI_Allreduce(mine, agreed, 2, MPI_UINT64_T, MPI_MAX, state_.comm); },
        [&](MPI_Request* r) {
          return MPI_Iallreduce(mine, agreed, 2, MPI_UINT64_T, MPI_MAX, state_.comm, r);
        });
    if (agreed[0] == 0) return 0;
    return std::max<std::uint64_t>(agreed[1], 1);
  }

  void to_ints(const std::vector<Block>& blocks, std::vector<int>& counts,
               std::vector<int>& displacements) const {
    counts.resize(blocks.size());
    displacements.resize(blocks.size());
    for (std::size_t q = 0; q < blocks.size(); ++q) {
      counts[q] = static_cast<int>(blocks[q].count);
      displacements[q] = static_cast<int>(blocks[q].displacement);
    }
  }

  // Moves the blocks in `rounds` MPI_Alltoallw calls: round k moves
  // elements [k * piece_, (k + 1) * piece_) of every block, each described
  // by a datatype at its byte offset (MPI_Aint: no int limit on where a
  // block starts, and no count above a piece).
  void exchange_in_rounds(const char* call, const void* send, const std::vector<Block>& to,
                          const std::vector<Block>& from, std::size_t rounds) {
    std::vector<int> send_counts(size_), recv_counts(size_), zeros(size_, 0);
    std::vector<MPI_Datatype> send_types(size_, MPI_BYTE), recv_types(size_, MPI_BYTE);
    for (std::size_t round = 0; round < rounds; ++round) {
      const std::size_t first = round * piece_;
      std::vector<MPI_Datatype> made;
      auto describe = [&](const Block& block, int& count, MPI_Datatype& type) {
        count = 0;
        type = MPI_BYTE;
        if (block.count <= first) return;
        const int n = static_cast<int>(std::min(piece_, block.count - first));
        const int lengths[1] = {n};
        const MPI_Aint offsets[1] = {
            static_cast<MPI_Aint>((block.displacement + first) * element_)};
        check(MPI_Type_create_hindexed(1, lengths, offsets, datatype_, &type),
              "MPI_Type_create_hindexed");
        check(MPI_Type_commit(&type), "MPI_Type_commit");
        made.push_back(type);
        count = 1;
      };
      {
        const MpiLock lock;
        for (std::size_t q = 0; q < size_; ++q) {
          describe(to[q], send_counts[q], send_types[q]);
          describe(from[q], recv_counts[q], recv_types[q]);
        }
      }
      collective_call(
          call,
          [&] {
            return MPI_Alltoallw(send, send_counts.data(), zeros.data(), send_types.data(),
                                 request_.recv, recv_counts.data(), zeros.data(), recv_types.data(),
                                 state_.comm);
          },
          [&](MPI_Request* r) {
            return MPI_Ialltoallw(send, send_counts.data(), zeros.data(), send_types.data(),
                                  request_.recv, recv_counts.data(), zeros.data(),
                                  recv_types.data(), state_.comm, r);
          });
      const MpiLock lock;
      for (MPI_Datatype& type : made) MPI_Type_free(&type);
    }
  }

  // At MPI_THREAD_MULTIPLE, MPI's blocking collective. Below it the
  // library holds its MPI lock around each MPI call, and a blocking
  // collective under the lock would stop this rank's other threads, whose
  // peers may be what the collective waits for (core/mpi_thread_level.h):
  // the non-blocking form, tested under the lock, yielding between tests
  // under the wait policy (so also bounded by the call's timeout).
  template <typename Blocking, typename Start>
  void collective_call(const char* call, Blocking blocking, Start start) {
    if (!mpi_calls_serialized()) {
      const BlockingCallWatch watch(request_, state_, call);
      return check(blocking(), call);
    }
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
  const std::size_t size_;   // ranks
};

bool is_reduction(CollectiveKind kind) { return traits_of(kind).reduces; }

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
  std::size_t in_count = request.count;
  if (request.kind == CollectiveKind::kReduceScatter) in_count = request.count * p;
  if (request.kind == CollectiveKind::kReduceScatterV) {
    in_count =
        std::accumulate(request.recv_counts.begin(), request.recv_counts.end(), std::size_t{0});
  }
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
  if (request.kind == CollectiveKind::kReduceScatterV) call.reduce_scatter_v();
  if (request.kind != CollectiveKind::kReduce || state.rank == request.root) {
    round_from_float32(request.recv, wide_out, out_count, request.type,
                       request.op == ReduceOp::kMean ? state.size : 1);
  }
}

}  // namespace

// Every collective: MPI has each one.
std::span<const CollectiveKind> MpiPassthroughAlgorithm::serves() const {
  static constexpr auto kServed = [] {
    std::array<CollectiveKind, kNumCollectiveKinds> kinds{};
    for (int k = 0; k < kNumCollectiveKinds; ++k)
      kinds[static_cast<std::size_t>(k)] = static_cast<CollectiveKind>(k);
    return kinds;
  }();
  return kServed;
}

Support MpiPassthroughAlgorithm::supports_served(const Request& request,
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
    case CollectiveKind::kAllToAll: return call.all_to_all();
    case CollectiveKind::kAllToAllV: return call.all_to_all_v();
    case CollectiveKind::kAllGatherV: return call.all_gather_v();
    case CollectiveKind::kReduceScatterV: return call.reduce_scatter_v();
    case CollectiveKind::kGather: return call.gather(false);
    case CollectiveKind::kGatherV: return call.gather(true);
    case CollectiveKind::kScatter: return call.scatter(false);
    case CollectiveKind::kScatterV: return call.scatter(true);
  }
}

}  // namespace collective::internal
