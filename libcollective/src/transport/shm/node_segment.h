// The shared-memory segment of one node communicator: per-rank progress
// flags, per-rank staging slots for inputs, and result slots, mapped by every
// rank of the node (POSIX shared memory; the name is unlinked as soon as all
// ranks have it mapped, so nothing is left in /dev/shm after a crash).
//
// Ranks synchronize through monotonically increasing round numbers in the
// flags, never through a barrier: a rank waits only for the flags it needs,
// polling, then yielding, then sleeping on the node event (shared_event.h), and
// gives up at the call's deadline with a TimeoutError that names the rank
// it waited for.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include "transport/shm/two_way_tuner.h"
#include "transport/shm/shared_allocation.h"
#include "core/scratch_buffer.h"
#include "core/communicator_state.h"
#include "transport/shm/shared_event.h"
#include "core/wait_guard.h"
#include "util/cpu_relax.h"
#include "core/request.h"

namespace collective::internal {

// Pipeline depth: slots per rank, so a rank may copy in this many rounds
// ahead of the slowest reader of its slots. Four lets a rank that has the
// processor go on working for a while when a peer does not (other jobs,
// more ranks than cores), at a segment of (ranks + 1) x 4 slots.
inline constexpr int kSegmentDepth = 4;

// Each rank has a box per slot whose first 8 bytes are the round it holds:
// a reader polls the round and finds what follows in the same cache lines,
// one transfer between cores instead of two. After the round comes the
// call header (the first bytes of the call's fingerprint, for the
// cross-rank check: cross_rank_check/node_board_check.h), then up to
// kInlineBytes of input. A rank that rejected its call carries no input,
// and its whole fingerprint, with the cause, takes the box. 4 KiB of input
// fit: up to there one hand-off through the boxes beats the slots' rounds
// (4 ranks on 2 cores, 1-2 KiB: 7.5-9 us against 13-15 us through the
// slots; 2 ranks, all_to_all of 1-4 KiB per rank: one hand-off against two).
inline constexpr std::size_t kBoxBytes = 4160;
inline constexpr std::size_t kBoxPayloadBytes = kBoxBytes - 8;
inline constexpr std::size_t kCallHeaderBytes = 40;
inline constexpr std::size_t kInlineBytes = kBoxPayloadBytes - kCallHeaderBytes;
static_assert(kInlineBytes >= 4096);

class NodeSegment {
 public:
  enum class Flag : int { kPosted = 0, kReduced = 1, kDone = 2 };

  // Collective over state.node_comm; bounded by the request's deadline.
  // `slot_bytes` is the staging unit per rank and round (rounded up to a
  // multiple of 4 KiB).
  static std::shared_ptr<NodeSegment> create(const Request& request, CommunicatorState& state,
                                             std::size_t slot_bytes);
  // The communicator's segment, sized by use: made by the first call that
  // needs it with slots of that call's size (a page at least,
  // COLLECTIVE_SHM_SLOT_BYTES at most), made again once with
  // COLLECTIVE_SHM_SLOT_BYTES slots by the first later call that does not
  // fit them (collective over the node, at the same call on every rank).
  static NodeSegment& of(const Request& request, CommunicatorState& state);
  ~NodeSegment();
  NodeSegment(const NodeSegment&) = delete;
  NodeSegment& operator=(const NodeSegment&) = delete;

  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  std::size_t slot_bytes() const { return slot_bytes_; }
  // The communicator rank of a local rank (for messages).
  int comm_rank(int local) const { return comm_ranks_[static_cast<std::size_t>(local)]; }

  // The next round number (the same sequence on every rank of the node).
  std::uint64_t begin_round() { return ++round_; }
  // The first of `count` consecutive round numbers.
  std::uint64_t reserve_rounds(std::uint64_t count) {
    const std::uint64_t first = round_ + 1;
    round_ += count;
    return first;
  }

  std::byte* staging(int local, std::uint64_t round) const;
  std::byte* result(std::uint64_t round) const;

  void publish(Flag flag, std::uint64_t round);
  // Every flag of this rank at `round`: the rank is through with the round.
  void finish_round(std::uint64_t round);
  // Has `local`'s flag reached `round`? (Never blocks.)
  bool reached(int local, Flag flag, std::uint64_t round) const;
  // Waits until `local`'s flag reaches `round`.
  void wait(int local, Flag flag, std::uint64_t round, const Request& request);
  // For progress loops: a pass did nothing because `local`'s flag had not
  // reached `round` (among others). Spins, then waits under the WaitGuard
  // policy (abort, stall warning, dead ranks, TimeoutError at the
  // deadline), sleeping through `sleeper` once yielding has lasted; the
  // loop calls sleeper.stop() when a pass makes progress.
  void stall(int local, Flag flag, std::uint64_t round, const Request& request,
             unsigned& idle_passes, EventSleeper& sleeper);
  // Waits until every local rank's kDone reaches round - kSegmentDepth, so
  // that this rank may overwrite its slots of `round`.
  void wait_slot_free(std::uint64_t round, const Request& request);

  // The inline box of `local` for `round`: its call header (kBoxPayloadBytes
  // from there), and its input, after the header.
  std::byte* call_header(int local, std::uint64_t round) const;
  std::byte* inline_data(int local, std::uint64_t round) const {
    return call_header(local, round) + kCallHeaderBytes;
  }
  // Marks this rank's box for `round` filled (release).
  void publish_inline(std::uint64_t round);
  // Has `local` filled its box for `round`? (Never blocks.)
  bool inline_ready(int local, std::uint64_t round) const;
  void wait_inline(int local, std::uint64_t round, const Request& request);
  // What every publish moves while a rank of the node sleeps.
  SharedEvent& event() const;
  // Polls before a waiter yields, and how long it yields before it sleeps.
  int spins_before_yield() const;
  std::chrono::microseconds sleep_after() const;

  // The one way the segment's waits wait: polls `ready()` a while, then
  // under the WaitGuard that `make_guard()` returns (made only when the
  // polls did not do; its sleep_after set by the caller) yields, then
  // sleeps on event() until `ready()`. `describe` names what it waits for.
  template <typename Ready, typename MakeGuard, typename Describe>
  void wait_until(Ready&& ready, MakeGuard&& make_guard, Describe&& describe) {
    for (int i = 0; i < spins_before_yield(); ++i) {
      cpu_relax();
      if (ready()) return;
    }
    WaitGuard& waiting = make_guard();
    waiting.begin_wait();
    EventSleeper sleeper(event());
    while (!ready()) {
      waiting.idle(describe, [&](std::chrono::microseconds limit) { sleeper.sleep(limit); });
    }
  }

  // Zero-copy inputs: where this rank's input of `round` lies (valid=false:
  // in its staging slot), and reading a peer's.
  void publish_input(std::uint64_t round, const SharedRange* range);
  // The peer's input base for `round`, mapped here; nullptr when the peer
  // staged its input. Call only after waiting for its kPosted.
  const std::byte* peer_input(int local, std::uint64_t round, const Request& request);

  // Which way data goes between the ranks (two_way_tuner.h).
  HandoffTuner& handoff() { return *handoff_; }
  // This rank's own scratch, for a piece that is reduced before it is
  // written to a slot; reused across calls.
  std::byte* private_scratch(std::size_t bytes) { return private_scratch_.get(bytes); }

  // Spinning is pointless when ranks outnumber processors: yield at once.
  void set_yield_at_once(bool value) { yield_at_once_ = value; }

 private:
  struct Control;
  NodeSegment() = default;
  Control& control(int local) const;

  std::byte* base_ = nullptr;
  // Sets the offsets and sizes below for slots of `slot_bytes`.
  void lay_out(std::size_t slot_bytes);

  std::size_t mapped_bytes_ = 0;
  std::size_t slot_bytes_ = 0;
  std::size_t controls_offset_ = 0;
  std::size_t staging_offset_ = 0;
  std::size_t results_offset_ = 0;
  int local_rank_ = 0;
  int local_size_ = 1;
  std::vector<int> comm_ranks_;
  std::uint64_t round_ = 0;
  bool yield_at_once_ = false;
  int rank_ = 0;
  // Its communicator, and the WaitGuard of the call in progress (made at
  // its first wait): every wait follows the library's wait policy.
  const CommunicatorState* owner_ = nullptr;
  std::optional<WaitGuard> guard_;
  WaitGuard& guard(const Request& request);
  WaitTarget describe_wait(int local, Flag flag, std::uint64_t round) const;
  PeerMappings peer_mappings_;
  // The flags last seen of every local rank: monotonic, so a value already
  // seen high enough answers without touching the peer's cache line.
  mutable std::vector<std::uint64_t> seen_[3];
  std::optional<HandoffTuner> handoff_;
  ScratchBuffer private_scratch_;
};

// The node segment's slot in CommunicatorState::resources.
struct NodeSegmentResource final : AlgorithmResources {
  std::shared_ptr<NodeSegment> segment;
  // The segment has (or tried, and /dev/shm refused) full-size slots: it is
  // not made again.
  bool full_size = false;
  // The call size the segment was made for (a page at least): the same on
  // every rank, whatever slots each node got; a larger call remakes it.
  std::size_t sized_for = 0;
  // Why the segment cannot be had (it did not fit in /dev/shm), once every
  // rank learned it: the algorithms that need it then refuse.
  std::optional<std::string> unavailable;
  // process_vm_readv between the node's ranks was refused (every rank
  // learned it at the same call): shared_memory's all_to_all uses the
  // slots only.
  bool cross_memory_attach_refused = false;
};

// The communicator's segment when one was made, else nullptr (no call).
NodeSegment* existing_node_segment(const CommunicatorState& state);
// Whether `request` runs on the segment as it is, with no setup step (no
// first making, no remaking at full size): an algorithm that keeps the
// cross-rank check open into its run may only then take the segment, since
// a rank whose call differs would never join the setup.
bool node_segment_serves_without_setup(const Request& request, const CommunicatorState& state);
// Why this communicator cannot have a node segment, or nullptr.
const std::string* node_segment_unavailable(const CommunicatorState& state);

}  // namespace collective::internal
