#include "algorithms/shared_memory_exchange.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <cerrno>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <sys/uio.h>
#include <unistd.h>

#include "algorithms/block_route_choice.h"
#include "algorithms/node_phases.h"
#include "core/log.h"
#include "core/trace.h"
#include "cross_rank_check/node_board_check.h"
#include "kernels/plain_copy.h"
#include "kernels/streaming_copy.h"
#include "transport/shm/node_segment.h"
#include "transport/shm/shared_allocation.h"

namespace collective::internal {
namespace {

using Flag = NodeSegment::Flag;

constexpr std::size_t kLineBytes = 64;

// The header a rank puts in its box before an all_to_all_v: the largest
// block it sends (every rank then knows how many rounds the call takes),
// whether the offset and length of each of its blocks follow (its peers may
// then read them from its buffer, never past what it sends), and those,
// one pair per local rank.
struct BoxHeader {
  std::uint64_t largest_block;
  std::uint64_t offsets_follow;
  // Peers may read its send buffer with process_vm_readv (not in place:
  // its blocks stay as they are until every peer is through): where.
  std::uint64_t readable;
  std::int64_t pid;
  std::uint64_t send_address;
  // Its send buffer lies in a Communicator::allocate allocation (not in
  // place): peers may map it and read it with memcpy.
  std::uint64_t shared;
  // Its blocks for its peers follow the places in the box (they fit):
  // the call needs nothing more from it.
  std::uint64_t inlined;
  // The node's first rank's only: the route of this call's blocks from
  // kCrossMemoryAttachBytes (BlockRoute; algorithms/block_route_choice.h).
  std::uint64_t route;
  // Every rank's: its last routed call and that call's time here.
  std::uint64_t report_call;
  double report_seconds;
};
struct BlockPlace {
  std::uint64_t offset;
  std::uint64_t bytes;
};
constexpr std::size_t kMaxPlacesInBox = (kInlineBytes - sizeof(BoxHeader)) / sizeof(BlockPlace);

// Bytes left in a box after the header and the places of `ranks` local
// ranks: a rank whose blocks for its peers fit them sends them there.
constexpr std::size_t inline_room(std::size_t ranks) {
  const std::size_t used = sizeof(BoxHeader) + ranks * sizeof(BlockPlace);
  return ranks > kMaxPlacesInBox || used >= kInlineBytes ? 0 : kInlineBytes - used;
}

// One side of this rank's exchange, in bytes, indexed by local rank.
struct Blocks {
  std::span<std::size_t> offset;
  std::span<std::size_t> bytes;
};

// Not copyable: the spans point into its one allocation (one per call,
// not eight).
struct Exchange {
  explicit Exchange(std::size_t ranks) : storage(8 * ranks) {
    std::size_t* next = storage.data();
    for (std::span<std::size_t>* part : {&out.offset, &out.bytes, &in.offset, &in.bytes,
                                         &peer_offset, &peer_bytes, &peer_pid, &peer_address}) {
      *part = {next, ranks};
      next += ranks;
    }
  }
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  std::vector<std::size_t> storage;
  const std::byte* send = nullptr;
  std::byte* recv = nullptr;
  bool in_place = false;
  Blocks out;  // this rank's block for each local rank, in send
  Blocks in;   // each local rank's block for this rank, in recv
  // Where each peer's block for this rank lies in that peer's buffer, for
  // the peers that publish their buffer (a shared allocation).
  std::span<std::size_t> peer_offset;
  std::span<std::size_t> peer_bytes;
  // From the header hand-off: each peer's process and send buffer, and
  // whether every rank's send buffer may be read directly.
  std::span<std::size_t> peer_pid;
  std::span<std::size_t> peer_address;
  bool all_readable = false;
  bool all_shared = false;
  // The route the node's first rank chose for blocks from
  // kCrossMemoryAttachBytes.
  BlockRoute route = BlockRoute::kKernelCopy;
  // This rank's outgoing blocks stay as they are through the call (every
  // form but all_to_all's in-place one): peers may read them directly.
  bool sources_stay = true;
  // Every rank sends the same block to every peer that takes one
  // (all_gather_v) or sends to one peer only (gather): it is staged once,
  // in the whole slot, and each receiver reads it from there.
  bool one_outgoing_block = false;
  // In-place all_to_all_v where this rank's blocks did not fit its box:
  // the peers' blocks that came in their boxes would land on this rank's
  // own blocks for them, which the later steps still send. They wait here
  // (at their offsets in recv) until those have left: deliver_held.
  bool hold_inlined = false;
  std::vector<std::byte> held;
  std::vector<std::pair<std::size_t, std::size_t>> held_places;  // recv offset, bytes
};

// Writes the blocks that hold_inlined kept back, once this rank's own
// blocks have left.
void deliver_held(Exchange& x) {
  std::size_t from = 0;
  for (const auto& [offset, bytes] : x.held_places) {
    plain_copy(x.recv + offset, x.held.data() + from, bytes);
    from += bytes;
  }
}

// Where this rank's block for local rank q lies in its send buffer (out)
// and where q's block for it goes in its receive buffer (in), per kind.
// Blocks a rank neither sends nor receives have 0 bytes.
void fill_exchange(Exchange& x, const Request& request, const NodeSegment& segment, int rank) {
  const std::size_t element = request.element_bytes();
  const auto ranks = static_cast<std::size_t>(segment.local_size());
  const CollectiveKind kind = request.kind;
  const bool all_to_all = kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kAllToAllV;
  x.in_place = request.in_place(rank);
  x.recv = static_cast<std::byte*>(request.recv);
  // all_to_all's in-place form sends from recv, whose blocks it overwrites;
  // the gathers' and scatters' own block lies inside the other buffer, and
  // what goes out is never written by the call.
  x.send = x.in_place && all_to_all ? x.recv : static_cast<const std::byte*>(request.send);
  x.sources_stay = !(x.in_place && all_to_all);
  x.one_outgoing_block = kind == CollectiveKind::kAllGather ||
                         kind == CollectiveKind::kAllGatherV || kind == CollectiveKind::kGather ||
                         kind == CollectiveKind::kGatherV || kind == CollectiveKind::kBroadcast;
  const std::size_t block = request.count * element;
  const auto own = static_cast<std::size_t>(segment.comm_rank(segment.local_rank()));
  const bool root = static_cast<int>(own) == request.root;
  for (std::size_t q = 0; q < ranks; ++q) {
    const auto c = static_cast<std::size_t>(segment.comm_rank(static_cast<int>(q)));
    const bool to_root = static_cast<int>(c) == request.root;
    x.out.offset[q] = x.out.bytes[q] = x.in.offset[q] = x.in.bytes[q] = 0;
    switch (kind) {
      case CollectiveKind::kAllToAll:
        x.out.offset[q] = x.in.offset[q] = c * block;
        x.out.bytes[q] = x.in.bytes[q] = block;
        x.peer_offset[q] = own * block;
        x.peer_bytes[q] = block;
        break;
      case CollectiveKind::kAllToAllV:
        x.in.offset[q] = request.recv_displacements[c] * element;
        x.in.bytes[q] = request.recv_counts[c] * element;
        // In place, recv's layout is what goes out too (the send spans are empty).
        x.out.offset[q] = x.in_place ? x.in.offset[q] : request.send_displacements[c] * element;
        x.out.bytes[q] = x.in_place ? x.in.bytes[q] : request.send_counts[c] * element;
        break;
      case CollectiveKind::kAllGather:
        x.out.bytes[q] = block;
        x.in.offset[q] = c * block;
        x.in.bytes[q] = block;
        break;
      case CollectiveKind::kAllGatherV:
        x.out.bytes[q] = block;
        x.in.offset[q] = request.recv_displacements[c] * element;
        x.in.bytes[q] = request.recv_counts[c] * element;
        break;
      case CollectiveKind::kGather:
      case CollectiveKind::kGatherV:
        if (to_root) x.out.bytes[q] = block;
        if (!root) break;
        x.in.offset[q] =
            kind == CollectiveKind::kGather ? c * block : request.recv_displacements[c] * element;
        x.in.bytes[q] = kind == CollectiveKind::kGather ? block : request.recv_counts[c] * element;
        break;
      case CollectiveKind::kScatter:
      case CollectiveKind::kScatterV:
        if (to_root) x.in.bytes[q] = block;
        if (!root) break;
        x.out.offset[q] =
            kind == CollectiveKind::kScatter ? c * block : request.send_displacements[c] * element;
        x.out.bytes[q] =
            kind == CollectiveKind::kScatter ? block : request.send_counts[c] * element;
        break;
      case CollectiveKind::kBroadcast:
        // The root's one buffer for every peer; each peer's one buffer
        // receives it (send and recv are that buffer).
        if (root && !to_root) x.out.bytes[q] = block;
        if (!root && to_root) x.in.bytes[q] = block;
        break;
      case CollectiveKind::kAllReduce:
      case CollectiveKind::kReduceScatter:
      case CollectiveKind::kReduce:
      case CollectiveKind::kBarrier:
      case CollectiveKind::kReduceScatterV: break;  // not exchanges (shared_memory.cc)
    }
  }
}

std::size_t send_extent(const Exchange& x) {
  std::size_t extent = 0;
  for (std::size_t q = 0; q < x.out.bytes.size(); ++q) {
    if (x.out.bytes[q] != 0) extent = std::max(extent, x.out.offset[q] + x.out.bytes[q]);
  }
  return extent;
}

// This rank's send buffer as a shared allocation its peers may map, when
// it is one (and the call is not in place).
std::optional<SharedRange> shared_send(const Exchange& x) {
  if (!x.sources_stay) return std::nullopt;
  const std::size_t extent = send_extent(x);
  if (extent == 0) return std::nullopt;
  return shared_allocations().find(x.send, extent);
}

std::size_t largest_peer_block(const Exchange& x, int own) {
  std::size_t largest = 0;
  for (std::size_t q = 0; q < x.out.bytes.size(); ++q) {
    if (static_cast<int>(q) != own) largest = std::max(largest, x.out.bytes[q]);
  }
  return largest;
}

// The largest block this rank sends to or receives from a peer: what the
// route chosen for the call moves here (block_route_choice.h).
std::size_t largest_block_here(const Exchange& x, int own) {
  std::size_t largest = 0;
  for (std::size_t q = 0; q < x.out.bytes.size(); ++q) {
    if (static_cast<int>(q) != own) largest = std::max({largest, x.out.bytes[q], x.in.bytes[q]});
  }
  return largest;
}

void copy_own_block(const Exchange& x, int own) {
  const auto r = static_cast<std::size_t>(own);
  // In place the block is already where it belongs; the argument checks
  // made send_counts[rank] == recv_counts[rank].
  // Likewise for the gathers' and scatters' in-place forms.
  if (x.in_place || x.in.bytes[r] == 0) return;
  plain_copy(x.recv + x.in.offset[r], x.send + x.out.offset[r],
             std::min(x.in.bytes[r], x.out.bytes[r]));
}

// Equal blocks that all fit one rank's box: every rank's whole send buffer
// is in its box of `round` (posted by post_send_buffer, or by the
// cross-rank check that carried it); each rank copies its block out of
// every peer's box. In place works: every box was filled before any block
// comes in. Latency-bound: no Exchange (its vectors would cost more than
// the copies).
void read_boxes(NodeSegment& segment, const Request& request, std::uint64_t round) {
  const int r = segment.local_rank();
  const int ranks = segment.local_size();
  const std::size_t block = request.bytes();
  const std::size_t own = static_cast<std::size_t>(segment.comm_rank(r)) * block;
  auto* recv = static_cast<std::byte*>(request.recv);
  if (request.send != request.recv) {
    plain_copy(recv + own, static_cast<const std::byte*>(request.send) + own, block);
  }
  for (int q = 0; q < ranks; ++q) {
    if (q == r) continue;
    segment.wait_inline(q, round, request);
    // The box holds the peer's send buffer: its block for this rank at
    // this rank's place in it.
    plain_copy(recv + static_cast<std::size_t>(segment.comm_rank(q)) * block,
               segment.inline_data(q, round) + own, block);
  }
  segment.finish_round(round);
}

// An all_gather, all_gather_v or broadcast whose every block fits a box,
// with the cross-rank check carried: each rank's box holds what it sends
// (its block; the root's buffer) right after its fingerprint, so one
// hand-off checks the call and moves every block, and each rank copies
// what it receives out of the senders' boxes. Every rank takes this path
// or none: the counts agree wherever the check passes. No Exchange, no
// header or places: at these sizes they would cost more than the copies.
void blocks_through_boxes(NodeSegment& segment, const Request& request, CommunicatorState& state) {
  const std::size_t element = request.element_bytes();
  const bool broadcast = request.kind == CollectiveKind::kBroadcast;
  const bool uneven = request.kind == CollectiveKind::kAllGatherV;
  const bool sends = !broadcast || state.rank == request.root;
  const std::uint64_t round =
      check_on_node(segment, *request.carried_check, request, state,
                    {static_cast<const std::byte*>(request.send), sends ? request.bytes() : 0});
  auto* recv = static_cast<std::byte*>(request.recv);
  if (broadcast) {
    for (int q = 0; !sends && request.bytes() != 0 && q < segment.local_size(); ++q) {
      if (segment.comm_rank(q) == request.root) {
        plain_copy(recv, segment.inline_data(q, round), request.bytes());
      }
    }
    return segment.finish_round(round);
  }
  const auto offset_of = [&](std::size_t c) {
    return uneven ? request.recv_displacements[c] * element : c * request.bytes();
  };
  const auto bytes_of = [&](std::size_t c) {
    return uneven ? request.recv_counts[c] * element : request.bytes();
  };
  const auto own = static_cast<std::size_t>(state.rank);
  if (!request.in_place(state.rank) && request.bytes() != 0) {
    plain_copy(recv + offset_of(own), request.send, request.bytes());
  }
  for (int q = 0; q < segment.local_size(); ++q) {
    if (q == segment.local_rank()) continue;
    const auto c = static_cast<std::size_t>(segment.comm_rank(q));
    const std::size_t bytes = bytes_of(c);
    if (bytes != 0) plain_copy(recv + offset_of(c), segment.inline_data(q, round), bytes);
  }
  segment.finish_round(round);
}

std::uint64_t post_send_buffer(NodeSegment& segment, const Request& request, std::size_t bytes) {
  const std::uint64_t round = segment.begin_round();
  segment.wait_slot_free(round, request);
  plain_copy(segment.inline_data(segment.local_rank(), round), request.send, bytes);
  segment.publish_inline(round);
  return round;
}

// Bytes this rank sends its peers when packed: one_outgoing_block's one
// block once, else every peer's block.
std::size_t packed_bytes(const Exchange& x, int own) {
  if (x.one_outgoing_block) return largest_peer_block(x, own);
  std::size_t total = 0;
  for (std::size_t q = 0; q < x.out.bytes.size(); ++q) {
    if (static_cast<int>(q) != own) total += x.out.bytes[q];
  }
  return total;
}

// Writes this rank's header, its places and, when they fit, its blocks
// for its peers (packed in local-rank order; one_outgoing_block's once)
// into `box`. Returns the bytes written.
std::size_t fill_box(std::byte* box, const Exchange& x, int own, bool with_offsets) {
  const auto ranks = x.out.bytes.size();
  const std::size_t packed = packed_bytes(x, own);
  const bool inlined = with_offsets && packed <= inline_room(ranks);
  // A rank that sends everything here has nothing left to be read: it
  // never holds back the others' direct copies.
  const BoxHeader mine{inlined ? 0 : largest_peer_block(x, own),
                       with_offsets ? 1u : 0u,
                       inlined || x.sources_stay ? 1u : 0u,
                       static_cast<std::int64_t>(getpid()),
                       reinterpret_cast<std::uintptr_t>(x.send),
                       inlined || (with_offsets && shared_send(x)) ? 1u : 0u,
                       inlined ? 1u : 0u,
                       0,
                       0,
                       0.0};
  std::memcpy(box, &mine, sizeof(mine));
  if (!with_offsets) return sizeof(mine);
  for (std::size_t q = 0; q < ranks; ++q) {
    const BlockPlace place{x.out.offset[q], x.out.bytes[q]};
    std::memcpy(box + sizeof(BoxHeader) + q * sizeof(place), &place, sizeof(place));
  }
  std::size_t filled = sizeof(BoxHeader) + ranks * sizeof(BlockPlace);
  if (!inlined) return filled;
  for (std::size_t q = 0; q < ranks; ++q) {
    const std::size_t bytes = static_cast<int>(q) == own ? 0 : x.out.bytes[q];
    if (bytes == 0) continue;
    plain_copy(box + filled, x.send + x.out.offset[q], bytes);
    filled += bytes;
    if (x.one_outgoing_block) break;  // every peer that takes it reads this one copy
  }
  return filled;
}

// Copies this rank's block out of the box of peer q, which sent its
// blocks inline: after q's places, at the sum of q's blocks for the local
// ranks before this one (one_outgoing_block: at the start). Never past
// what q sent this rank, even when the ranks disagree on the counts.
void read_inlined_block(Exchange& x, const std::byte* theirs, int q, int own) {
  const auto ranks = x.out.bytes.size();
  const auto peer = static_cast<std::size_t>(q);
  const auto me = static_cast<std::size_t>(own);
  auto place_of = [&](std::size_t p) {
    BlockPlace place{};
    std::memcpy(&place, theirs + sizeof(BoxHeader) + p * sizeof(place), sizeof(place));
    return place;
  };
  std::size_t at = 0;
  if (!x.one_outgoing_block) {
    for (std::size_t p = 0; p < me; ++p) {
      if (p != peer) at += place_of(p).bytes;
    }
  }
  const std::size_t length = std::min(x.in.bytes[peer], place_of(me).bytes);
  const std::byte* block = theirs + sizeof(BoxHeader) + ranks * sizeof(BlockPlace) + at;
  if (length != 0 && x.hold_inlined) {
    x.held.insert(x.held.end(), block, block + length);
    x.held_places.emplace_back(x.in.offset[peer], length);
  } else if (length != 0) {
    plain_copy(x.recv + x.in.offset[peer], block, length);
  }
  // Received: nothing of q's is left for the later steps.
  x.in.bytes[peer] = 0;
  x.peer_bytes[peer] = 0;
}

// The first hand-off of all_to_all_v, all_gather_v, gather(_v) and
// scatter(_v): every rank learns the largest block of the call still to
// move (so all take the same rounds) and, where the node is small enough
// for the offsets to fit the box, where each peer's block for it lies in
// that peer's buffer. A rank whose blocks for its peers fit the rest of
// the box sends them there (each rank decides for itself and says so in
// its header: nothing to agree on beforehand); a call where every rank's
// did ends with this hand-off. With the cross-rank check carried
// (request.carried_check), the box is the check's payload: one hand-off
// checks the call and moves the blocks. Returns the largest block left.
std::size_t agree_on_blocks(NodeSegment& segment, Exchange& x, const Request& request,
                            CommunicatorState& state, bool with_offsets) {
  const int r = segment.local_rank();
  const int ranks = segment.local_size();
  BlockRouteChoice& routes = block_route_choice(state, r == 0);
  routes.exchange_started();
  alignas(64) std::array<std::byte, kInlineBytes> box;
  const std::size_t filled = fill_box(box.data(), x, r, with_offsets);
  BoxHeader mine{};
  std::memcpy(&mine, box.data(), sizeof(mine));
  if (r == 0) {
    mine.route = static_cast<std::uint64_t>(routes.propose(request.kind, largest_block_here(x, r)));
  }
  const BlockRouteChoice::Report report = routes.report();
  mine.report_call = report.call;
  mine.report_seconds = report.seconds;
  std::memcpy(box.data(), &mine, sizeof(mine));
  bool reports_agree = true;
  double slowest = report.seconds;
  std::uint64_t round = 0;
  if (request.carried_check != nullptr) {
    round = check_on_node(segment, *request.carried_check, request, state, {box.data(), filled});
  } else {
    round = segment.begin_round();
    segment.wait_slot_free(round, request);
    plain_copy(segment.inline_data(r, round), box.data(), filled);
    segment.publish_inline(round);
  }
  copy_own_block(x, r);
  x.hold_inlined = !x.sources_stay && mine.inlined == 0;
  if (mine.inlined != 0) {
    for (int q = 0; q < ranks; ++q) {
      if (q != r) x.out.bytes[static_cast<std::size_t>(q)] = 0;  // sent
    }
  }
  std::size_t largest = mine.largest_block;
  x.all_readable = mine.readable != 0;
  x.all_shared = mine.shared != 0;
  for (int q = 0; q < ranks; ++q) {
    if (q == r) continue;
    segment.wait_inline(q, round, request);
    const std::byte* theirs = segment.inline_data(q, round);
    BoxHeader header{};
    std::memcpy(&header, theirs, sizeof(header));
    if (q == 0) x.route = header.route == 1 ? BlockRoute::kSlots : BlockRoute::kKernelCopy;
    reports_agree = reports_agree && header.report_call == report.call;
    slowest = std::max(slowest, header.report_seconds);
    largest = std::max<std::size_t>(largest, header.largest_block);
    x.all_readable = x.all_readable && header.readable != 0;
    x.all_shared = x.all_shared && header.shared != 0;
    x.peer_pid[static_cast<std::size_t>(q)] = static_cast<std::size_t>(header.pid);
    x.peer_address[static_cast<std::size_t>(q)] = header.send_address;
    if (header.offsets_follow != 0) {
      BlockPlace place{};
      std::memcpy(&place, theirs + sizeof(BoxHeader) + static_cast<std::size_t>(r) * sizeof(place),
                  sizeof(place));
      x.peer_offset[static_cast<std::size_t>(q)] = place.offset;
      x.peer_bytes[static_cast<std::size_t>(q)] = place.bytes;
    }
    if (header.inlined != 0) read_inlined_block(x, theirs, q, r);
  }
  segment.finish_round(round);
  if (r == 0) {
    x.route = static_cast<BlockRoute>(mine.route);
    if (reports_agree) routes.learn(report.call, slowest);
  }
  return largest;
}

// Reads `length` bytes at `remote` in process `pid` into `local` with
// process_vm_readv. False, with the reason, when the kernel refuses.
bool read_from_peer(pid_t pid, std::byte* local, std::uintptr_t remote, std::size_t length,
                    std::string& refusal) {
  std::size_t done = 0;
  while (done < length) {
    iovec here{local + done, length - done};
    iovec there{reinterpret_cast<void*>(remote + done), length - done};
    const ssize_t moved = process_vm_readv(pid, &here, 1, &there, 1, 0);
    if (moved < 0 && errno == EINTR) continue;
    if (moved <= 0) {
      refusal = moved < 0 ? std::strerror(errno) : "no bytes moved";
      return false;
    }
    done += static_cast<std::size_t>(moved);
  }
  return true;
}

// Where a receive block and the peer's block differ modulo 16, the
// kernel's copy into it runs at a fifth of its speed (kernels/plain_copy.h;
// 1 MiB 356 us against 77 here): it goes through a bounce buffer with the
// peer's alignment instead, this much at a time (in the cache), then
// plain_copy: 1.35x the aligned read (measured 104 us for that 1 MiB).
constexpr std::size_t kBounceBytes = 256 * 1024;

// This thread's bounce buffer, kBounceBytes from `alignment` modulo 64.
std::byte* bounce_buffer(std::uintptr_t alignment) {
  thread_local const std::unique_ptr<std::byte[]> buffer(new std::byte[kBounceBytes + 128]);
  const auto start = reinterpret_cast<std::uintptr_t>(buffer.get());
  const std::uintptr_t aligned = (start + 63) & ~std::uintptr_t{63};
  return reinterpret_cast<std::byte*>(aligned + (alignment & 63));
}

// Reads this rank's block from every peer's send buffer with
// process_vm_readv. False, with the reason, when the kernel refuses.
bool read_peers_directly(const NodeSegment& segment, const Exchange& x, std::string& refusal) {
  const TraceScope traced("shm cross-memory read");
  const int r = segment.local_rank();
  for (int q = 0; q < segment.local_size(); ++q) {
    const auto peer = static_cast<std::size_t>(q);
    if (q == r) continue;
    const std::size_t length = std::min(x.in.bytes[peer], x.peer_bytes[peer]);
    std::byte* local = x.recv + x.in.offset[peer];
    const std::uintptr_t remote = x.peer_address[peer] + x.peer_offset[peer];
    const auto pid = static_cast<pid_t>(x.peer_pid[peer]);
    bool read = true;
    if (length > kMisalignedCopyThreshold &&
        misaligned_pair(reinterpret_cast<std::uintptr_t>(local), remote)) {
      std::byte* bounce = bounce_buffer(remote);
      for (std::size_t done = 0; read && done < length; done += kBounceBytes) {
        const std::size_t piece = std::min(kBounceBytes, length - done);
        read = read_from_peer(pid, bounce, remote + done, piece, refusal);
        if (read) plain_copy(local + done, bounce, piece);
      }
    } else {
      read = read_from_peer(pid, local, remote, length, refusal);
    }
    if (!read) {
      refusal = "process_vm_readv from local rank " + std::to_string(q) + " (pid " +
                std::to_string(x.peer_pid[peer]) + "): " + refusal;
      return false;
    }
  }
  return true;
}

// One hand-off of a yes/no from every rank; true when all said yes.
bool all_agree(NodeSegment& segment, const Request& request, bool mine) {
  const int r = segment.local_rank();
  const std::uint64_t round = segment.begin_round();
  segment.wait_slot_free(round, request);
  const std::uint64_t yes = mine ? 1 : 0;
  std::memcpy(segment.inline_data(r, round), &yes, sizeof(yes));
  segment.publish_inline(round);
  bool all = mine;
  for (int q = 0; q < segment.local_size(); ++q) {
    if (q == r) continue;
    segment.wait_inline(q, round, request);
    std::uint64_t theirs = 0;
    std::memcpy(&theirs, segment.inline_data(q, round), sizeof(theirs));
    all = all && theirs != 0;
  }
  segment.finish_round(round);
  return all;
}

// Whether this call may go by cross-memory attach: blocks large enough,
// every send buffer readable (none in place), the places known, and the
// kernel has not refused on this communicator. The same on every rank.
bool use_cross_memory_attach(const Exchange& x, std::size_t largest, bool with_offsets,
                             const CommunicatorState& state) {
  const auto* resource = state.resources.find<NodeSegmentResource>();
  return largest >= kCrossMemoryAttachBytes && x.all_readable && with_offsets &&
         (resource == nullptr || !resource->cross_memory_attach_refused);
}

// Every rank reads its blocks from its peers' send buffers (one copy, by
// the kernel), then says so in a second hand-off, after which every send
// buffer is its caller's again. When the kernel refused any rank (no
// ptrace permission between the ranks: Yama, seccomp), every rank learns
// it in that hand-off, logs it once for the communicator, and returns
// false: the call, and every later one, goes through the slots.
bool exchange_by_cross_memory_attach(NodeSegment& segment, const Exchange& x,
                                     const Request& request, CommunicatorState& state) {
  std::string refusal;
  const bool mine = read_peers_directly(segment, x, refusal);
  if (all_agree(segment, request, mine)) return true;
  state.resources.find<NodeSegmentResource>()->cross_memory_attach_refused = true;
  COLLECTIVE_LOG(kWarn, request.label()
                            << " (rank " << state.rank
                            << "): cross-memory attach between the node's ranks was refused ("
                            << (mine ? std::string("on another rank") : refusal)
                            << "); shared_memory's exchanges (all_to_all, gathers, scatters) go "
                               "through the node segment's slots on this communicator from now on");
  return false;
}

// A call whose blocks may go either way (use_cross_memory_attach): the
// route the node's first rank chose (agree_on_blocks), timed for its tuner;
// `through_slots` runs the rounds, also where the kernel refused.
template <typename ThroughSlots>
void exchange_by_route(NodeSegment& segment, const Exchange& x, const Request& request,
                       CommunicatorState& state, ThroughSlots&& through_slots) {
  BlockRouteChoice& routes = block_route_choice(state, segment.local_rank() == 0);
  routes.begin_routed();
  if (x.route == BlockRoute::kSlots ||
      !exchange_by_cross_memory_attach(segment, x, request, state)) {
    through_slots();
  }
  routes.end_routed();
}

// Bytes of piece k of a block of `total` bytes cut into pieces of `piece`.
std::size_t piece_length(std::size_t total, std::size_t k, std::size_t piece) {
  const std::size_t start = k * piece;
  return start >= total ? 0 : std::min(piece, total - start);
}

// The rounds through the staging slots. Each pass of the loop does what
// the flags allow: stage round g (this rank's piece of every peer's block,
// in the peer's part of its slot) once every rank has read round
// g - depth; read round g (its piece of every peer's block, into recv)
// once every rank has staged it. A rank whose send buffer is a shared
// allocation stages nothing: its peers read its blocks in place, and it
// returns only after every peer has read its last round.
void exchange_in_rounds(NodeSegment& segment, const Exchange& x, const Request& request,
                        std::size_t largest, bool offer_in_place, std::size_t streaming_bytes,
                        bool one_round = false) {
  const int r = segment.local_rank();
  const int ranks = segment.local_size();
  // Every peer's part of a slot holds whole cache lines (slots hold at
  // least 64 bytes per local rank: NodeSegment::of). When every rank's
  // send buffer is read in place (one_round, agreed), nothing is staged:
  // one round covers the largest block.
  // With one outgoing block per rank, that block's piece fills the slot.
  const std::size_t piece =
      one_round ? std::max<std::size_t>(largest, 1)
      : x.one_outgoing_block
          ? segment.slot_bytes()
          : std::max(kLineBytes, segment.slot_bytes() / static_cast<std::size_t>(ranks) /
                                     kLineBytes * kLineBytes);
  // Where a reader finds its piece in a peer's slot.
  const std::size_t place_in_slot = x.one_outgoing_block ? 0 : static_cast<std::size_t>(r) * piece;
  const std::uint64_t rounds = (largest + piece - 1) / piece;
  if (rounds == 0) return;
  const std::optional<SharedRange> shared =
      offer_in_place ? shared_send(x) : std::optional<SharedRange>();
  std::size_t received = 0;
  for (const std::size_t bytes : x.in.bytes) received += bytes;
  // Outputs beyond this rank's share of the cache go straight to memory.
  const auto copy_out = received >= streaming_bytes ? streaming_copy : plain_copy;

  const std::uint64_t first = segment.reserve_rounds(rounds);
  const std::uint64_t end = first + rounds;
  const std::uint64_t depth = kSegmentDepth;
  std::uint64_t next_stage = first;
  std::uint64_t next_read = first;
  unsigned idle_passes = 0;
  EventSleeper sleeper(segment.event());
  // Whom the last pass waited for, for the timeout message.
  int blocking = r;
  Flag blocking_flag = Flag::kPosted;
  std::uint64_t blocking_round = first;
  auto all_reached = [&](Flag flag, std::uint64_t round) {
    for (int q = 0; q < ranks; ++q) {
      if (q != r && !segment.reached(q, flag, round)) {
        blocking = q;
        blocking_flag = flag;
        blocking_round = round;
        return false;
      }
    }
    return true;
  };

  while (next_read < end) {
    bool progressed = false;
    // Stage: this rank read round g - depth itself (g < next_read + depth)
    // and so did every peer; in place, piece k of each outgoing block is
    // staged before piece k of the incoming one overwrites it.
    if (next_stage < end && next_stage < next_read + depth &&
        (next_stage <= depth || all_reached(Flag::kDone, next_stage - depth))) {
      const std::size_t k = next_stage - first;
      if (shared) {
        segment.publish_input(next_stage, &*shared);
      } else {
        segment.publish_input(next_stage, nullptr);
        const TraceScope traced("shm copy-in");
        std::byte* slot = segment.staging(r, next_stage);
        for (int q = 0; q < ranks; ++q) {
          const auto peer = static_cast<std::size_t>(q);
          const std::size_t length = q == r ? 0 : piece_length(x.out.bytes[peer], k, piece);
          if (length == 0) continue;
          if (x.one_outgoing_block) {
            plain_copy(slot, x.send + x.out.offset[peer] + k * piece, length);
            break;  // every peer that takes it reads this one copy
          }
          plain_copy(slot + peer * piece, x.send + x.out.offset[peer] + k * piece, length);
        }
      }
      segment.publish(Flag::kPosted, next_stage);
      ++next_stage;
      progressed = true;
    }
    if (next_read < next_stage && all_reached(Flag::kPosted, next_read)) {
      const std::size_t k = next_read - first;
      const TraceScope traced("shm copy-out");
      for (int q = 0; q < ranks; ++q) {
        const auto peer = static_cast<std::size_t>(q);
        std::size_t length = q == r ? 0 : piece_length(x.in.bytes[peer], k, piece);
        if (length == 0) continue;
        const std::byte* in_place = segment.peer_input(q, next_read, request);
        // Never past the peer's block, even when the ranks disagree on the
        // counts (the cross-rank check off): its allocation may end there.
        if (in_place != nullptr) {
          length = std::min(length, piece_length(x.peer_bytes[peer], k, piece));
          if (length == 0) continue;
        }
        const std::byte* from = in_place != nullptr ? in_place + x.peer_offset[peer] + k * piece
                                                    : segment.staging(q, next_read) + place_in_slot;
        copy_out(x.recv + x.in.offset[peer] + k * piece, from, length);
      }
      segment.finish_round(next_read);
      ++next_read;
      progressed = true;
    }
    if (progressed) {
      idle_passes = 0;
      sleeper.stop();
    } else {
      segment.stall(blocking, blocking_flag, blocking_round, request, idle_passes, sleeper);
    }
  }
  if (shared) {
    // Peers read this rank's send buffer: it is the caller's again only
    // once every peer is through the last round.
    for (int q = 0; q < ranks; ++q) {
      if (q != r) segment.wait(q, Flag::kDone, end - 1, request);
    }
  }
}

// A request whose size makes NodeSegment::of give slots that hold a piece
// of `block` bytes for every local rank (up to COLLECTIVE_SHM_SLOT_BYTES).
// `block` is the same on every rank, so every rank decides alike.
Request sized_for_blocks(const Request& request, std::size_t block, int ranks) {
  Request sized = request;
  const std::size_t element = request.element_bytes();
  const std::size_t per_rank = (block + element - 1) / element;
  sized.count = per_rank > SIZE_MAX / static_cast<std::size_t>(ranks)
                    ? SIZE_MAX / element
                    : per_rank * static_cast<std::size_t>(ranks);
  return sized;
}

}  // namespace

bool exchange_fits_boxes(const Request& request, int ranks) {
  const auto local = static_cast<std::size_t>(ranks);
  const std::size_t room = inline_room(local);
  const std::size_t element = request.element_bytes();
  if (request.kind == CollectiveKind::kAllGatherV) {
    return std::all_of(request.recv_counts.begin(), request.recv_counts.end(),
                       [&](std::size_t count) { return count <= room / element; });
  }
  if (request.kind == CollectiveKind::kAllGather || request.kind == CollectiveKind::kGather ||
      request.kind == CollectiveKind::kBroadcast) {
    return request.count <= room / element;
  }
  if (request.kind == CollectiveKind::kScatter) {
    return local < 2 || request.count <= room / element / (local - 1);
  }
  return false;
}

bool all_to_all_fits_boxes(const Request& request, int ranks) {
  return request.kind == CollectiveKind::kAllToAll && request.count > 0 &&
         request.bytes() <= kInlineBytes / static_cast<std::size_t>(ranks);
}

void shared_memory_exchange(const Request& request, CommunicatorState& state) {
  const auto streaming_bytes = [&] { return streaming_threshold(*state.topology, state.rank); };
  if (request.carried_check != nullptr && request.kind == CollectiveKind::kAllToAll) {
    // The send buffer rides in the box with the fingerprint; once the
    // check agrees, every rank's is there.
    NodeSegment& segment = *node_board(state);
    const std::uint64_t round =
        check_on_node(segment, *request.carried_check, request, state,
                      {static_cast<const std::byte*>(request.send),
                       request.bytes() * static_cast<std::size_t>(segment.local_size())});
    return read_boxes(segment, request, round);
  }
  if (request.carried_check != nullptr &&
      (request.kind == CollectiveKind::kAllGather || request.kind == CollectiveKind::kAllGatherV ||
       request.kind == CollectiveKind::kBroadcast) &&
      exchange_fits_boxes(request, state.size)) {
    return blocks_through_boxes(*node_board(state), request, state);
  }
  if (request.kind == CollectiveKind::kAllToAll) {
    if (request.count == 0) return;
    const int ranks = state.size;
    const std::size_t block = request.bytes();
    NodeSegment& segment = NodeSegment::of(sized_for_blocks(request, block, ranks), state);
    if (all_to_all_fits_boxes(request, ranks)) {
      const std::size_t bytes = block * static_cast<std::size_t>(ranks);
      return read_boxes(segment, request, post_send_buffer(segment, request, bytes));
    }
    Exchange x(static_cast<std::size_t>(segment.local_size()));
    fill_exchange(x, request, segment, state.rank);
    if (block >= kCrossMemoryAttachBytes) {
      // The header hand-off tells whether every rank's send buffer may be
      // read directly (not in place anywhere), and copies the own block.
      const bool with_offsets = static_cast<std::size_t>(segment.local_size()) <= kMaxPlacesInBox;
      agree_on_blocks(segment, x, request, state, with_offsets);
      // Every send buffer mapped by its peers: one round of memcpy from
      // them. Else the kernel's copy where allowed.
      if (x.all_shared) {
        return exchange_in_rounds(segment, x, request, block, true, streaming_bytes(), true);
      }
      if (use_cross_memory_attach(x, block, with_offsets, state)) {
        return exchange_by_route(segment, x, request, state, [&] {
          exchange_in_rounds(segment, x, request, block, true, streaming_bytes());
        });
      }
    } else {
      copy_own_block(x, segment.local_rank());
    }
    return exchange_in_rounds(segment, x, request, block, true, streaming_bytes());
  }
  // all_to_all_v, all_gather(_v), gather(_v), scatter(_v), broadcast: the rounds depend
  // on every rank's counts, which only the first hand-off tells. The
  // segment is looked up at count 0 (the counts differ by rank, and a rank
  // that would make it again alone would wait for its peers forever).
  Request unsized = request;
  unsized.count = 0;
  NodeSegment& first = NodeSegment::of(unsized, state);
  Exchange x(static_cast<std::size_t>(first.local_size()));
  fill_exchange(x, request, first, state.rank);
  const bool with_offsets = static_cast<std::size_t>(first.local_size()) <= kMaxPlacesInBox;
  const std::size_t largest = agree_on_blocks(first, x, request, state, with_offsets);
  [&] {
    if (largest == 0) return;
    if (x.all_shared) {
      return exchange_in_rounds(first, x, request, largest, true, streaming_bytes(), true);
    }
    auto through_slots = [&] {
      // May make the segment again with larger slots (every rank at this
      // point, with the same size): `first` is not used past here.
      NodeSegment& segment = NodeSegment::of(sized_for_blocks(request, largest, state.size), state);
      exchange_in_rounds(segment, x, request, largest, with_offsets, streaming_bytes());
    };
    if (use_cross_memory_attach(x, largest, with_offsets, state)) {
      return exchange_by_route(first, x, request, state, through_slots);
    }
    through_slots();
  }();
  deliver_held(x);
}

}  // namespace collective::internal
