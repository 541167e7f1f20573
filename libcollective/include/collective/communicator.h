// A group of MPI processes that run collectives together.
#pragma once

#include "collective/export.h"

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "collective/algorithm.h"
#include "collective/options.h"
#include "collective/plan.h"
#include "collective/topology.h"
#include "collective/types.h"
#include "collective/work.h"

namespace collective {

// tf.distribute's choice of collective implementation
// (tf.distribute.experimental.CollectiveCommunication), and what each means
// here (docs/algorithms.md): AUTO lets the library choose per call from the
// topology and the message size; RING forces the ring over MPI
// point-to-point; NCCL forces NCCL (device buffers, builds with NCCL).
enum class CollectiveCommunication : int { kAuto = 0, kRing, kNccl };

// kAuto -> Algorithm::kAuto, kRing -> Algorithm::kRing,
// kNccl -> Algorithm::kNccl. Put the result in an options struct's
// `algorithm`. Throws InvalidArgumentError for a value outside the enum.
COLLECTIVE_API Algorithm to_algorithm(CollectiveCommunication communication);

namespace internal {
struct CommunicatorState;
struct CommunicatorAccess;
}  // namespace internal

// A Communicator owns a private duplicate of an MPI communicator, so library
// traffic never mixes with the caller's. Copies share one underlying group
// (cheap handle); two Communicators created separately are independent and
// may be used side by side from separate threads (one thread at a time
// each), under the thread level MPI was initialised at (docs/errors.md,
// "Threads on separate communicators"): Environment asks for
// MPI_THREAD_MULTIPLE; at SERIALIZED the library serialises its own MPI
// calls and a process makes one communicator at a time (a second making
// in another thread meanwhile raises InvalidArgumentError on every rank);
// at FUNNELED or SINGLE a call from a thread other than MPI's main thread
// raises InvalidArgumentError. Making a communicator is collective over
// its parent: threads making them from one parent at once take turns,
// and which threads of different ranks then pair is not defined.
//
// Every collective is blocking: when it returns, the output buffer holds the
// result. Each also has an `_async` form that returns at once with a Work
// (collective/work.h: its contract), completed by the library's progress
// thread while the caller computes; calls start in the order the program
// issued them, blocking and `_async` alike, the same on every rank. Every rank of the communicator
// must call the same collectives in the same order with matching count, type, op and root: before
// each call the ranks compare what they were asked to do and all raise MismatchError when they
// disagree (COLLECTIVE_VALIDATE=0 skips this). A call that cannot finish fails with TimeoutError
// after its timeout; it never hangs forever. Errors, and which of them leave the communicator
// usable: docs/errors.md.
//
// Counts and displacements are element counts (size_t; above 2^31 is
// fine). The v-forms take one count (and displacement, in elements from the
// start of the buffer) per rank, as spans of size() entries. In-place forms:
//   all_reduce / reduce:       send == recv
//   reduce_scatter:            recv == send + rank * recv_count elements
//   reduce_scatter_v:          recv == send + (recv_counts[0] + ... + recv_counts[rank-1])
//   all_gather:                send == recv + rank * send_count elements
//   all_gather_v:              send == recv + recv_displacements[rank]
//   all_to_all / all_to_all_v: send == recv (all_to_all_v then sends what
//                              recv_counts and recv_displacements describe)
//   gather (root):             send == recv + root * send_count
//   gather_v (root):           send == recv + recv_displacements[root]
//   scatter (root):            recv == send + root * recv_count
//   scatter_v (root):          recv == send + send_displacements[root]
class COLLECTIVE_API Communicator {
 public:
  // MPI_COMM_WORLD (duplicated). MPI must be initialized (see Environment).
  static Communicator world();

  // Wraps a caller-owned MPI communicator, given as its Fortran handle so
  // that this header needs no MPI: `Communicator::from_mpi(MPI_Comm_c2f(c))`.
  // The communicator is duplicated; the caller keeps ownership of `c`.
  // MPI_COMM_NULL, an intercommunicator, or a value that names no live
  // communicator of this process raise InvalidArgumentError naming the
  // value (docs/errors.md: what can and cannot be detected).
  static Communicator from_mpi(int mpi_fortran_handle);

  // The color of a rank that joins no group in split() (MPI_UNDEFINED's
  // meaning; MPI_UNDEFINED itself is accepted too). Its value is
  // MPI_UNDEFINED's in Open MPI and MPICH, so this header needs no mpi.h.
  static constexpr int kUndefinedColor = -32766;

  // Ranks with the same color form a new communicator, ordered by key (ties
  // by rank in this one). Collective: every rank calls it. A rank passing
  // kUndefinedColor gets a null communicator (is_null()). Any other
  // negative color raises InvalidArgumentError on every rank, naming the
  // rank and its color; this communicator stays usable.
  Communicator split(int color, int key) const;

  // The listed ranks of this communicator as a new one, ranked in the
  // listed order (what MPI_Comm_create_group and torch.distributed's
  // new_group make). Collective over the listed ranks only: the others do
  // not call it and may go on with other calls meanwhile. A list that is
  // empty, names a rank twice or outside this communicator, or leaves out
  // the calling rank raises InvalidArgumentError on the caller; lists that
  // differ between the listed ranks raise MismatchError on every listed rank
  // that reached the first listed one (which names both lists). A
  // listed rank that never calls fails the others with TimeoutError after
  // COLLECTIVE_TIMEOUT, and this communicator is then unusable (as after a
  // collective's timeout).
  Communicator subset(const std::vector<int>& ranks) const;

  // A new MPI communicator with this one's group and rank order, for code
  // that speaks MPI itself (mpi4py, a library taking an MPI_Comm), as its
  // Fortran handle: `MPI_Comm c = MPI_Comm_f2c(comm.to_mpi());`. The caller
  // owns it and frees it with MPI_Comm_free; the library never uses it, so
  // the caller's traffic on it never mixes with the library's. Its error
  // handler is MPI's default, MPI_ERRORS_ARE_FATAL. Collective: every rank
  // calls it; bounded by COLLECTIVE_TIMEOUT like split().
  int to_mpi() const;

  // After a rank died (PeerFailedError): the survivors each call shrink()
  // and get a communicator of the survivors, ranked in their order here,
  // with its own topology and shared-memory segments; this communicator
  // stays failed. The survivors first agree on which ranks failed, the same
  // set on every survivor also when another rank dies meanwhile; a rank
  // that dies after that agreement, in the milliseconds in which MPI builds
  // the new communicator, ends the survivors on its host with exit status
  // 14 (kExitAfterCommunicationFailure). On a healthy communicator it
  // returns a copy of it. Collective over the survivors; bounded by
  // COLLECTIVE_TIMEOUT (docs/errors.md, "Shrinking after a death").
  Communicator shrink() const;
  // The ranks known to have failed (PeerFailedError's failed_ranks(), or
  // what a shrink() agreed), ascending; empty on a healthy communicator.
  std::vector<int> failed_ranks() const;

  // True on a rank that passed kUndefinedColor to split(): it belongs to no
  // group; rank() is -1, size() 0, and every other call (collectives,
  // split, topology, allocate, choose_algorithm) raises
  // InvalidArgumentError. free() and destruction are no-ops.
  bool is_null() const;

  int rank() const;
  int size() const;

  // The machines this communicator's ranks run on (docs/topology.md).
  // Identical on every rank; fixed for the communicator's lifetime.
  const Topology& topology() const;

  // `bytes` of memory that ranks on the same node can read directly: a
  // buffer from here, passed as an all_reduce send buffer (or in place) or
  // an all_to_all(_v) send buffer (not in place), spares the shared-memory
  // algorithms the copy into their segment. Local,
  // not collective; 64-byte aligned; usable by every communicator and as
  // an ordinary buffer anywhere. allocate(0) returns nullptr. Throws
  // CommunicationError when the system refuses the memory.
  void* allocate(std::size_t bytes);
  // Releases memory from allocate(); nullptr is ignored. Any other pointer
  // raises InvalidArgumentError. Not during a collective that reads it.
  void deallocate(void* memory);

  // recv[i] = op over ranks of send[i], on every rank. count elements each.
  void all_reduce(const void* send, void* recv, std::size_t count, DataType type,
                  const AllReduceOptions& options = {});

  // send holds size() * recv_count elements; rank r receives block r of the
  // element-wise reduction.
  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType type,
                      const ReduceScatterOptions& options = {});

  // recv (size() * send_count elements) gets every rank's send block, in
  // rank order.
  void all_gather(const void* send, void* recv, std::size_t send_count, DataType type,
                  const AllGatherOptions& options = {});

  // buffer on options.root is copied to buffer on every rank.
  void broadcast(void* buffer, std::size_t count, DataType type,
                 const BroadcastOptions& options = {});

  // recv on options.root gets the reduction; recv is ignored (may be null)
  // on the other ranks.
  void reduce(const void* send, void* recv, std::size_t count, DataType type,
              const ReduceOptions& options = {});

  void barrier(const BarrierOptions& options = {});

  // send and recv hold size() * count elements: block q of send goes to
  // rank q, block q of recv comes from rank q.
  void all_to_all(const void* send, void* recv, std::size_t count, DataType type,
                  const AllToAllOptions& options = {});

  // send_counts[q] elements from send + send_displacements[q] go to rank q;
  // recv_counts[q] elements from rank q land at recv + recv_displacements[q].
  // send_counts[q] on this rank must equal recv_counts[this rank] on rank q.
  // In place (send == recv, not null) the send spans are ignored and may be
  // empty; null buffers (every count zero) are not in place: spans needed.
  void all_to_all_v(const void* send, std::span<const std::size_t> send_counts,
                    std::span<const std::size_t> send_displacements, void* recv,
                    std::span<const std::size_t> recv_counts,
                    std::span<const std::size_t> recv_displacements, DataType type,
                    const AllToAllOptions& options = {});

  // Rank q's send_count elements land at recv + recv_displacements[q] on
  // every rank; recv_counts (the same on every rank) says how many each
  // sends, so recv_counts[rank()] == send_count.
  void all_gather_v(const void* send, std::size_t send_count, void* recv,
                    std::span<const std::size_t> recv_counts,
                    std::span<const std::size_t> recv_displacements, DataType type,
                    const AllGatherOptions& options = {});

  // send holds recv_counts[0] + ... + recv_counts[size()-1] elements, block
  // q after the blocks before it; rank q receives block q of the reduction.
  // recv_counts is the same on every rank.
  void reduce_scatter_v(const void* send, void* recv, std::span<const std::size_t> recv_counts,
                        DataType type, const ReduceScatterOptions& options = {});

  // recv on options.root (size() * send_count elements) gets every rank's
  // send block in rank order; recv is ignored (may be null) elsewhere.
  void gather(const void* send, void* recv, std::size_t send_count, DataType type,
              const GatherOptions& options = {});

  // Rank q's send_count elements land at recv + recv_displacements[q] on
  // the root, which expects recv_counts[q] of them; the spans and recv are
  // ignored (may be empty or null) off the root.
  void gather_v(const void* send, std::size_t send_count, void* recv,
                std::span<const std::size_t> recv_counts,
                std::span<const std::size_t> recv_displacements, DataType type,
                const GatherOptions& options = {});

  // Block q of send (size() * recv_count elements) on options.root goes to
  // rank q; send is ignored (may be null) elsewhere.
  void scatter(const void* send, void* recv, std::size_t recv_count, DataType type,
               const ScatterOptions& options = {});

  // send_counts[q] elements from send + send_displacements[q] on the root go
  // to rank q, which expects recv_count of them; the spans and send are
  // ignored (may be empty or null) off the root.
  void scatter_v(const void* send, std::span<const std::size_t> send_counts,
                 std::span<const std::size_t> send_displacements, void* recv,
                 std::size_t recv_count, DataType type, const ScatterOptions& options = {});

  // The same collectives, started: each returns a Work once the call is
  // queued, after raising what the blocking call raises for its arguments
  // (same text). The buffers belong to the call until it finished (Work);
  // spans and options are copied. Needs MPI_THREAD_MULTIPLE (else
  // InvalidArgumentError). A blocking call, split, to_mpi, send, recv,
  // free, choose_algorithm and last_algorithm first wait for the calls in
  // flight on this communicator.
  Work all_reduce_async(const void* send, void* recv, std::size_t count, DataType type,
                        const AllReduceOptions& options = {});

  // Persistent form (collective/plan.h): a collective call that checks
  // the arguments, chooses the algorithm and agrees with the other ranks
  // once, writing nothing; the plan's start() then repeats the all-reduce
  // on these buffers. Needs MPI_THREAD_MULTIPLE, as the `_async` calls.
  Plan all_reduce_init(const void* send, void* recv, std::size_t count, DataType type,
                       const AllReduceOptions& options = {});
  Work reduce_scatter_async(const void* send, void* recv, std::size_t recv_count, DataType type,
                            const ReduceScatterOptions& options = {});
  Work all_gather_async(const void* send, void* recv, std::size_t send_count, DataType type,
                        const AllGatherOptions& options = {});
  Work broadcast_async(void* buffer, std::size_t count, DataType type,
                       const BroadcastOptions& options = {});
  Work reduce_async(const void* send, void* recv, std::size_t count, DataType type,
                    const ReduceOptions& options = {});
  Work barrier_async(const BarrierOptions& options = {});
  Work all_to_all_async(const void* send, void* recv, std::size_t count, DataType type,
                        const AllToAllOptions& options = {});
  Work all_to_all_v_async(const void* send, std::span<const std::size_t> send_counts,
                          std::span<const std::size_t> send_displacements, void* recv,
                          std::span<const std::size_t> recv_counts,
                          std::span<const std::size_t> recv_displacements, DataType type,
                          const AllToAllOptions& options = {});
  Work all_gather_v_async(const void* send, std::size_t send_count, void* recv,
                          std::span<const std::size_t> recv_counts,
                          std::span<const std::size_t> recv_displacements, DataType type,
                          const AllGatherOptions& options = {});
  Work reduce_scatter_v_async(const void* send, void* recv,
                              std::span<const std::size_t> recv_counts, DataType type,
                              const ReduceScatterOptions& options = {});
  Work gather_async(const void* send, void* recv, std::size_t send_count, DataType type,
                    const GatherOptions& options = {});
  Work gather_v_async(const void* send, std::size_t send_count, void* recv,
                      std::span<const std::size_t> recv_counts,
                      std::span<const std::size_t> recv_displacements, DataType type,
                      const GatherOptions& options = {});
  Work scatter_async(const void* send, void* recv, std::size_t recv_count, DataType type,
                     const ScatterOptions& options = {});
  Work scatter_v_async(const void* send, std::span<const std::size_t> send_counts,
                       std::span<const std::size_t> send_displacements, void* recv,
                       std::size_t recv_count, DataType type, const ScatterOptions& options = {});

  // Persistent forms of the collectives above, as all_reduce_init: the
  // same arguments, checked and agreed with the other ranks once; spans
  // and options are copied.
  Plan reduce_scatter_init(const void* send, void* recv, std::size_t recv_count, DataType type,
                           const ReduceScatterOptions& options = {});
  Plan all_gather_init(const void* send, void* recv, std::size_t send_count, DataType type,
                       const AllGatherOptions& options = {});
  Plan broadcast_init(void* buffer, std::size_t count, DataType type,
                      const BroadcastOptions& options = {});
  Plan reduce_init(const void* send, void* recv, std::size_t count, DataType type,
                   const ReduceOptions& options = {});
  Plan barrier_init(const BarrierOptions& options = {});
  Plan all_to_all_init(const void* send, void* recv, std::size_t count, DataType type,
                       const AllToAllOptions& options = {});
  Plan all_to_all_v_init(const void* send, std::span<const std::size_t> send_counts,
                         std::span<const std::size_t> send_displacements, void* recv,
                         std::span<const std::size_t> recv_counts,
                         std::span<const std::size_t> recv_displacements, DataType type,
                         const AllToAllOptions& options = {});
  Plan all_gather_v_init(const void* send, std::size_t send_count, void* recv,
                         std::span<const std::size_t> recv_counts,
                         std::span<const std::size_t> recv_displacements, DataType type,
                         const AllGatherOptions& options = {});
  Plan reduce_scatter_v_init(const void* send, void* recv, std::span<const std::size_t> recv_counts,
                             DataType type, const ReduceScatterOptions& options = {});
  Plan gather_init(const void* send, void* recv, std::size_t send_count, DataType type,
                   const GatherOptions& options = {});
  Plan gather_v_init(const void* send, std::size_t send_count, void* recv,
                     std::span<const std::size_t> recv_counts,
                     std::span<const std::size_t> recv_displacements, DataType type,
                     const GatherOptions& options = {});
  Plan scatter_init(const void* send, void* recv, std::size_t recv_count, DataType type,
                    const ScatterOptions& options = {});
  Plan scatter_v_init(const void* send, std::span<const std::size_t> send_counts,
                      std::span<const std::size_t> send_displacements, void* recv,
                      std::size_t recv_count, DataType type, const ScatterOptions& options = {});

  // Typed conveniences.
  template <typename T>
  void all_reduce(std::span<T> in_out, const AllReduceOptions& options = {}) {
    all_reduce(in_out.data(), in_out.data(), in_out.size(), DataTypeOf<std::remove_cv_t<T>>::value,
               options);
  }
  template <typename T>
  void broadcast(std::span<T> buffer, const BroadcastOptions& options = {}) {
    broadcast(buffer.data(), buffer.size(), DataTypeOf<std::remove_cv_t<T>>::value, options);
  }

  // Point-to-point: count elements of `type` to (from) rank `peer` of this
  // communicator (not this rank). Not collective: only the two ranks take
  // part, and neither consumes a sequence number of the collectives. send
  // returns once the peer's matching recv has accepted the message (a
  // synchronous send, as MPI_Ssend), so a mismatch (tag, count or type) is
  // a MismatchError on both ranks, naming both sides, before recv's buffer
  // is touched; a peer that never posts the matching call is a TimeoutError
  // naming it. Pairing and tags: PointToPointOptions. Host buffers only.
  void send(const void* buffer, std::size_t count, DataType type, int peer,
            const PointToPointOptions& options = {});
  void recv(void* buffer, std::size_t count, DataType type, int peer,
            const PointToPointOptions& options = {});
  // The same, started: the blocking call's argument checks raised at once
  // (same text), the pair numbered in program order, the exchange run on a
  // thread of this communicator's for the peer and direction, beside the
  // collectives in flight and the other peers' sends and recvs (an
  // isend/irecv exchange or ring completes, as under MPI); its failures
  // come from the Work. Needs MPI_THREAD_MULTIPLE, as the `_async`
  // collectives.
  Work send_async(const void* buffer, std::size_t count, DataType type, int peer,
                  const PointToPointOptions& options = {});
  Work recv_async(void* buffer, std::size_t count, DataType type, int peer,
                  const PointToPointOptions& options = {});

  // The algorithm a call with these arguments would run (what AUTO or the
  // COLLECTIVE_ALGORITHM override resolves to). Same answer on every rank.
  // `deterministic` as in AllReduceOptions (for the reducing collectives).
  // A kind, type or algorithm outside its enum raises InvalidArgumentError
  // naming choose_algorithm and the value.
  Algorithm choose_algorithm(CollectiveKind kind, std::size_t count, DataType type,
                             Algorithm requested = Algorithm::kAuto,
                             bool deterministic = false) const;

  // The algorithm the most recent collective on this communicator ran.
  Algorithm last_algorithm() const;

  // Number of collectives this communicator has started.
  std::uint64_t sequence_number() const;

  // Makes the communicator unusable, from any thread, at any time: a
  // collective blocked in this process fails within milliseconds with
  // CommunicationError ("aborted by Communicator::abort: <reason>"), and
  // every later call fails at once. Only this process is affected; the
  // other ranks see this one stop answering (their timeout, or their own
  // abort). A call inside the mpi algorithm's blocking MPI collective is
  // released only when that collective returns. See docs/errors.md.
  void abort(const std::string& reason);
  // Whether abort() was called on this communicator (any copy).
  bool aborted() const;

  // Releases the underlying MPI communicator now. Later calls on any copy
  // raise InvalidArgumentError. Destruction of the last copy frees it too.
  void free();

  Communicator(const Communicator&) = default;
  Communicator& operator=(const Communicator&) = default;
  Communicator(Communicator&&) noexcept = default;
  Communicator& operator=(Communicator&&) noexcept = default;
  ~Communicator();

 private:
  // The library's internals reach the state through CommunicatorAccess
  // (src/api/communicator_access.h); it is not part of the API.
  friend struct internal::CommunicatorAccess;
  COLLECTIVE_HIDDEN internal::CommunicatorState& state() const;
  COLLECTIVE_HIDDEN explicit Communicator(std::shared_ptr<internal::CommunicatorState> state);
  std::shared_ptr<internal::CommunicatorState> state_;
};

}  // namespace collective
