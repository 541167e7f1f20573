#include "transport/shm/node_segment.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "collective/errors.h"
#include "core/env_params.h"
#include "core/log.h"
#include "core/mpi_check.h"
#include "core/resource_unavailable.h"
#include "core/mpi_thread_level.h"
#include "transport/shm/shared_object_owner.h"
#include "transport/shm/shared_event.h"

namespace collective::internal {
namespace {

constexpr std::uint64_t kMagic = 0x636f6c6c5f73686dULL;  // "coll_shm"
constexpr std::uint32_t kLayoutVersion = 5;
constexpr std::size_t kPage = 4096;
// Polls of a flag between yields when ranks have their own processors: a
// peer that is running answers within a few hundred nanoseconds, and a few
// microseconds of spinning cost nothing next to a trip through the scheduler.
constexpr int kSpinsBetweenYields = 256;
// How long a wait yields before it sleeps on the node event (shared_event.h).
// Ranks with processors of their own: a peer that is late by more than a
// millisecond is not about to answer, and the processor may serve the
// application's other threads. More ranks than processors: after a few
// yields. Sleeping at once measured better on a loaded machine (4 ranks on
// 2 cores, 8-64 B: p50 12.8 us against 16 us) but on an idle one it costs
// 8 ranks on 2 cores 2-3x at 8 B-4 KiB (50-100 us against 20-45 us, MPI
// 28-90 us): every hand-off then pays a futex wake and a switch.
constexpr std::chrono::microseconds kSleepAfter{1000};
constexpr std::chrono::microseconds kSleepAfterOversubscribed{20};
constexpr std::size_t kNameBytes = 64;

struct Header {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t local_size;
  std::uint64_t slot_bytes;
  std::uint64_t depth;
};

// The node's event, which every publish moves while a rank sleeps: on its
// own line of the header page, after the header.
constexpr std::size_t kEventOffset = 128;
static_assert(sizeof(Header) <= kEventOffset);
// The handoff preferences (two_way_tuner.h), written by the first local
// rank now and then, read by every rank once per call: lines of their own.
constexpr std::size_t kHandoffBoardOffset = 256;
static_assert(kEventOffset + sizeof(SharedEvent) <= kHandoffBoardOffset);
static_assert(kHandoffBoardOffset + sizeof(HandoffBoard) <= kPage);

std::size_t round_up(std::size_t value, std::size_t unit) {
  return (value + unit - 1) / unit * unit;
}

std::atomic<std::uint64_t> g_segment_counter{0};

// Waits for a non-blocking MPI operation of the segment's setup, under the
// library's wait policy (transport/wait_guard.h).
void wait_setup(MPI_Request& mpi_request, const Request& request, const CommunicatorState& state,
                const std::vector<int>& node_ranks, const char* what) {
  WaitGuard guard(request, state, "shared_memory setup");
  int done = 0;
  while (true) {
    {
      const MpiLock lock;
      check_mpi(MPI_Test(&mpi_request, &done, MPI_STATUS_IGNORE), "MPI_Test", request.label(),
                state.rank);
    }
    if (done) return;
    guard.idle([&] {
      WaitTarget target;
      for (int rank : node_ranks) {
        if (rank != state.rank) target.ranks.push_back(rank);
      }
      target.what = std::string("the ranks of this node, setting up its shared-memory segment (") +
                    what + ")";
      return target;
    });
  }
}

const char* flag_meaning(NodeSegment::Flag flag) {
  switch (flag) {
    case NodeSegment::Flag::kPosted: return "post its input";
    case NodeSegment::Flag::kReduced: return "publish its reduced slice";
    case NodeSegment::Flag::kDone: return "finish reading the shared slots";
  }
  return "?";
}

}  // namespace

// The control block's parts are outside the anonymous namespace, as
// NodeSegment::Control that holds them is.
struct alignas(128) PaddedFlag {
  std::atomic<std::uint64_t> value;
};

struct InputSlot {
  std::atomic<std::uint64_t> round;  // the round this description is for
  std::int64_t pid;
  std::uint64_t id;
  std::uint64_t mapped_bytes;
  std::uint64_t offset;
};

// The data follows the round directly: up to 56 bytes share its line.
struct alignas(64) InlineBox {
  std::atomic<std::uint64_t> round;
  std::byte payload[kBoxPayloadBytes];
};
static_assert(sizeof(InlineBox) == kBoxBytes);

struct NodeSegment::Control {
  PaddedFlag flags[3];
  alignas(128) InputSlot inputs[kSegmentDepth];
  alignas(128) InlineBox boxes[kSegmentDepth];
};

NodeSegment::Control& NodeSegment::control(int local) const {
  return *reinterpret_cast<Control*>(base_ + controls_offset_ +
                                     static_cast<std::size_t>(local) * sizeof(Control));
}

std::byte* NodeSegment::staging(int local, std::uint64_t round) const {
  const std::size_t slot = static_cast<std::size_t>(round % kSegmentDepth);
  return base_ + staging_offset_ +
         (static_cast<std::size_t>(local) * kSegmentDepth + slot) * slot_bytes_;
}

std::byte* NodeSegment::result(std::uint64_t round) const {
  return base_ + results_offset_ + static_cast<std::size_t>(round % kSegmentDepth) * slot_bytes_;
}

void NodeSegment::lay_out(std::size_t slot_bytes) {
  const auto local_size = static_cast<std::size_t>(local_size_);
  slot_bytes_ = round_up(slot_bytes, kPage);
  controls_offset_ = kPage;
  staging_offset_ = round_up(kPage + local_size * sizeof(Control), kPage);
  results_offset_ = staging_offset_ + local_size * kSegmentDepth * slot_bytes_;
  mapped_bytes_ = results_offset_ + kSegmentDepth * slot_bytes_;
}

namespace {

// What /dev/shm has free, for messages ("unknown" when statvfs fails).
std::string shm_free_text() {
  struct statvfs info {};
  if (statvfs("/dev/shm", &info) != 0) return "an unknown amount";
  return std::to_string(static_cast<unsigned long long>(info.f_bavail) * info.f_frsize) + " bytes";
}

// Sizes the object and reserves its memory now, so that a /dev/shm too
// small is an error here rather than a SIGBUS at the first touch of a page.
// Returns 0 or the errno.
int reserve(int fd, std::size_t bytes) {
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) return errno;
  return posix_fallocate(fd, 0, static_cast<off_t>(bytes));
}

// The smallest slot the segment is shrunk to before the node algorithms
// are given up: below it a large all_reduce runs in so many rounds that
// the point-to-point algorithms serve it as well.
constexpr std::size_t kSmallestFittedSlot = 64 * 1024;

}  // namespace

std::shared_ptr<NodeSegment> NodeSegment::create(const Request& request, CommunicatorState& state,
                                                 std::size_t slot_bytes) {
  const std::string operation = request.label();
  const Topology& topology = *state.topology;
  const Node& node = topology.node(topology.node_of(state.rank));

  std::shared_ptr<NodeSegment> segment(new NodeSegment());
  segment->rank_ = state.rank;
  segment->owner_ = &state;
  segment->local_rank_ = topology.local_rank(state.rank);
  segment->local_size_ = static_cast<int>(node.ranks.size());
  segment->comm_ranks_ = node.ranks;
  for (auto& seen : segment->seen_) seen.assign(node.ranks.size(), 0);
  segment->yield_at_once_ = state.node_oversubscribed;
  const auto local_size = static_cast<std::size_t>(segment->local_size_);

  // The first local rank creates, sizes and names the segment: it reserves
  // the memory for slots of `slot_bytes`, halving them while /dev/shm is
  // too small, down to kSmallestFittedSlot (docs/errors.md). The name and
  // the slot size it got travel in one broadcast; an empty name means it
  // failed.
  struct Announcement {
    char name[kNameBytes];
    std::uint64_t slot_bytes;
  } announced{};
  std::string failure;
  const bool creator = segment->local_rank_ == 0;
  int fd = -1;
  if (creator) {
    char* name = announced.name;
    std::snprintf(name, kNameBytes, "/collective-seg-%s-%llu", owner_tag().c_str(),
                  static_cast<unsigned long long>(g_segment_counter.fetch_add(1)));
    reclaim_stale_shared_objects();
    fd = create_own_shared_object(name);
    if (fd < 0) {
      failure = std::string("shm_open(") + name + ") failed: " + std::strerror(errno);
    } else {
      const std::size_t wanted = round_up(slot_bytes, kPage);
      const std::size_t floor =
          std::min(wanted, std::max(kSmallestFittedSlot, round_up(local_size * 64, kPage)));
      std::size_t slot = wanted;
      segment->lay_out(slot);
      int error = reserve(fd, segment->mapped_bytes_);
      while (error == ENOSPC && slot > floor) {
        slot = std::max(floor, round_up(slot / 2, kPage));
        segment->lay_out(slot);
        error = reserve(fd, segment->mapped_bytes_);
      }
      if (error != 0) {
        failure = "the node's shared-memory segment (" + std::to_string(segment->mapped_bytes_) +
                  " bytes for " + std::to_string(local_size) + " ranks with " +
                  std::to_string(slot) +
                  "-byte slots) cannot be reserved in /dev/shm: " + std::strerror(error) + " (" +
                  shm_free_text() + " free)";
        shm_unlink(name);
      } else if (slot != wanted) {
        std::ostringstream message;
        message << operation << ": /dev/shm (" << shm_free_text()
                << " free) cannot hold the node's shared-memory segment with slots of " << wanted
                << " bytes: using " << slot << "-byte slots, " << segment->mapped_bytes_
                << " bytes";
        log_shortage(message.str());
      }
      announced.slot_bytes = slot;
    }
    if (!failure.empty()) name[0] = '\0';
  }
  // The name goes away when this function returns, by any path (a peer
  // that dies during the setup makes it throw): nothing is left behind.
  // Every rank has it mapped (or has failed) by then: the return comes
  // after the agreement below.
  struct UnlinkOnReturn {
    const char* name;
    ~UnlinkOnReturn() {
      if (name != nullptr) shm_unlink(name);
    }
  } unlink_on_return{creator && announced.name[0] != '\0' ? announced.name : nullptr};
  MPI_Request pending = MPI_REQUEST_NULL;
  {
    const MpiLock lock;
    check_mpi(MPI_Ibcast(&announced, sizeof(announced), MPI_BYTE, 0, state.node_comm, &pending),
              "MPI_Ibcast", operation, state.rank);
  }
  wait_setup(pending, request, state, node.ranks, "sharing its name");
  if (!creator) {
    if (announced.name[0] == '\0') {
      failure = "the node's first rank could not reserve the shared-memory segment in /dev/shm";
    } else {
      segment->lay_out(announced.slot_bytes);
      fd = shm_open(announced.name, O_RDWR, 0);
      if (fd < 0) {
        failure = std::string("shm_open(") + announced.name + ") failed: " + std::strerror(errno);
      }
    }
  }
  if (failure.empty()) {
    void* base = mmap(nullptr, segment->mapped_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
      failure = std::string("mmap of the node segment failed: ") + std::strerror(errno);
    } else {
      segment->base_ = static_cast<std::byte*>(base);
    }
  }
  if (fd >= 0) close(fd);
  if (failure.empty()) {
    auto* header = reinterpret_cast<Header*>(segment->base_);
    if (creator) {
      *header = Header{kMagic, kLayoutVersion, static_cast<std::uint32_t>(local_size),
                       segment->slot_bytes_, kSegmentDepth};
    }
  }
  // Everyone has it mapped (or has failed) before the name goes away. The
  // agreement spans the whole communicator (every rank is in this call,
  // which is the first to need the segment), so that on a shortage every
  // rank, on every node, gives up the node algorithms in the same step.
  int all_ok = failure.empty() ? 1 : 0;
  {
    const MpiLock lock;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, state.comm, &pending),
              "MPI_Iallreduce", operation, state.rank);
  }
  wait_setup(pending, request, state, node.ranks, "agreeing that every rank mapped it");
  if (!all_ok) {
    const std::string cause = failure.empty()
                                  ? "another rank could not set up its node's shared-memory segment"
                                  : failure;
    // With no segment yet the node algorithms now refuse this communicator;
    // one that has a segment keeps it (NodeSegment::of).
    if (existing_node_segment(state) == nullptr) {
      state.resources
          .get_or_make<NodeSegmentResource>([] { return std::make_unique<NodeSegmentResource>(); })
          .unavailable = cause;
    }
    throw ResourceUnavailable(operation, state.rank, cause);
  }
  const auto* header = reinterpret_cast<const Header*>(segment->base_);
  if (header->magic != kMagic || header->version != kLayoutVersion ||
      header->local_size != local_size || header->slot_bytes != segment->slot_bytes_) {
    throw CommunicationError(operation, state.rank,
                             "the node's shared-memory segment has an unexpected layout (ranks "
                             "disagree on COLLECTIVE_SHM_SLOT_BYTES?)");
  }
  segment->handoff_.emplace(*reinterpret_cast<HandoffBoard*>(segment->base_ + kHandoffBoardOffset),
                            creator, env_params().shm_handoff, "shared_memory: calls of",
                            "hand data over");
  COLLECTIVE_LOG(kDebug, "node segment " << announced.name << ": " << local_size << " ranks, "
                                         << segment->mapped_bytes_ << " bytes, slots of "
                                         << segment->slot_bytes_ << " bytes");
  return segment;
}

// Sized by use (docs/errors.md, "The node segment's size"): the first call
// that needs the segment makes it with slots of its own size (at least a
// page), so a communicator of small calls holds a small segment; the first
// later call too large for those slots makes it again, once, with full
// COLLECTIVE_SHM_SLOT_BYTES slots. The call's size is the same on every
// rank (the cross-rank check saw to it), and the decision compares it with
// the size the segment was made for, not with the slots a node got (which
// differ between nodes of different rank counts): every rank of every
// node decides alike at the same call, as the setup (collective over the
// communicator) needs. Slots smaller than a call only cost rounds: any
// size serves any call.
namespace {

bool serves_without_setup(const NodeSegmentResource* resource, const Request& request) {
  return resource != nullptr && resource->segment != nullptr &&
         (resource->full_size || resource->sized_for >= request.bytes());
}

}  // namespace

bool node_segment_serves_without_setup(const Request& request, const CommunicatorState& state) {
  return serves_without_setup(state.resources.find<NodeSegmentResource>(), request);
}

NodeSegment& NodeSegment::of(const Request& request, CommunicatorState& state) {
  auto* resource = state.resources.find<NodeSegmentResource>();
  NodeSegment* existing = resource != nullptr ? resource->segment.get() : nullptr;
  if (serves_without_setup(resource, request)) return *existing;
  const Topology& topology = *state.topology;
  const std::size_t local_size = topology.node(topology.node_of(state.rank)).ranks.size();
  // Every owner's piece must hold at least one 64-byte unit.
  const std::size_t full = std::max(env_params().shm_slot_bytes, local_size * 64);
  const std::size_t smallest = round_up(std::max(kPage, local_size * 64), kPage);
  // COLLECTIVE_SHM_SLOT_BYTES is agreed across ranks (agreed_params.h).
  const bool full_size = existing != nullptr || request.bytes() >= env_params().shm_slot_bytes;
  const std::size_t sized_for = std::max(kPage, request.bytes());
  const std::size_t slot = full_size ? full : std::max(smallest, sized_for);
  std::shared_ptr<NodeSegment> made;
  try {
    made = create(request, state, slot);
  } catch (const ResourceUnavailable& shortage) {
    if (existing == nullptr) throw;
    // The small segment stays (every rank learned the same in one step):
    // calls run in more rounds; the full size is not tried again.
    resource->full_size = true;
    log_shortage(request.label() + ": the node's shared-memory segment stays at " +
                 std::to_string(existing->slot_bytes()) + "-byte slots: " + shortage.cause());
    return *existing;
  }
  resource = &state.resources.get_or_make<NodeSegmentResource>(
      [] { return std::make_unique<NodeSegmentResource>(); });
  resource->segment = std::move(made);
  resource->full_size = full_size;
  resource->sized_for = sized_for;
  return *resource->segment;
}

NodeSegment* existing_node_segment(const CommunicatorState& state) {
  const auto* resource = state.resources.find<NodeSegmentResource>();
  return resource != nullptr ? resource->segment.get() : nullptr;
}

const std::string* node_segment_unavailable(const CommunicatorState& state) {
  const auto* resource = state.resources.find<NodeSegmentResource>();
  return resource != nullptr && resource->unavailable ? &*resource->unavailable : nullptr;
}

NodeSegment::~NodeSegment() {
  if (base_ != nullptr) munmap(base_, mapped_bytes_);
}

void NodeSegment::publish(Flag flag, std::uint64_t round) {
  control(local_rank_).flags[static_cast<int>(flag)].value.store(round, std::memory_order_seq_cst);
  event().notify();
}

void NodeSegment::finish_round(std::uint64_t round) {
  Control& own = control(local_rank_);
  for (PaddedFlag& flag : own.flags) {
    if (flag.value.load(std::memory_order_relaxed) < round) {
      flag.value.store(round, std::memory_order_release);
    }
  }
  // One fence orders all three stores before notify()'s look at the
  // sleepers, as a sequentially consistent store each would (three locked
  // instructions a call, where one does).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  event().notify();
}

bool NodeSegment::reached(int local, Flag flag, std::uint64_t round) const {
  std::uint64_t& seen = seen_[static_cast<int>(flag)][static_cast<std::size_t>(local)];
  if (seen >= round) return true;
  seen = control(local).flags[static_cast<int>(flag)].value.load(std::memory_order_acquire);
  return seen >= round;
}

std::byte* NodeSegment::call_header(int local, std::uint64_t round) const {
  return control(local).boxes[round % kSegmentDepth].payload;
}

void NodeSegment::publish_inline(std::uint64_t round) {
  control(local_rank_).boxes[round % kSegmentDepth].round.store(round, std::memory_order_seq_cst);
  event().notify();
}

bool NodeSegment::inline_ready(int local, std::uint64_t round) const {
  return control(local).boxes[round % kSegmentDepth].round.load(std::memory_order_acquire) == round;
}

SharedEvent& NodeSegment::event() const {
  return *reinterpret_cast<SharedEvent*>(base_ + kEventOffset);
}

int NodeSegment::spins_before_yield() const { return yield_at_once_ ? 0 : kSpinsBetweenYields; }

std::chrono::microseconds NodeSegment::sleep_after() const {
  return yield_at_once_ ? kSleepAfterOversubscribed : kSleepAfter;
}

void NodeSegment::wait_inline(int local, std::uint64_t round, const Request& request) {
  if (inline_ready(local, round)) return;
  wait_until([&] { return inline_ready(local, round); },
             [&]() -> WaitGuard& { return guard(request); },
             [&] { return describe_wait(local, Flag::kPosted, round); });
}

WaitGuard& NodeSegment::guard(const Request& request) {
  if (!guard_ || !guard_->guards(request)) {
    guard_.emplace(request, *owner_, "shared_memory");
    guard_->set_sleep_after(sleep_after());
  }
  return *guard_;
}

WaitTarget NodeSegment::describe_wait(int local, Flag flag, std::uint64_t round) const {
  std::ostringstream what;
  what << "local rank " << local << " of this node to " << flag_meaning(flag) << " for round "
       << round << " (its flag shows round "
       << control(local).flags[static_cast<int>(flag)].value.load(std::memory_order_acquire) << ")";
  return WaitTarget{{comm_rank(local)}, what.str()};
}

void NodeSegment::stall(int local, Flag flag, std::uint64_t round, const Request& request,
                        unsigned& idle_passes, EventSleeper& sleeper) {
  ++idle_passes;
  const auto spins = static_cast<unsigned>(spins_before_yield());
  if (idle_passes < spins) {
    cpu_relax();
    return;
  }
  WaitGuard& waiting = guard(request);
  // The caller spun already: yield on this pass.
  if (idle_passes == std::max(spins, 1u)) waiting.begin_wait();
  waiting.idle([&] { return describe_wait(local, flag, round); },
               [&](std::chrono::microseconds limit) { sleeper.sleep(limit); });
}

void NodeSegment::wait(int local, Flag flag, std::uint64_t round, const Request& request) {
  if (reached(local, flag, round)) return;
  const std::atomic<std::uint64_t>& value = control(local).flags[static_cast<int>(flag)].value;
  wait_until([&] { return value.load(std::memory_order_acquire) >= round; },
             [&]() -> WaitGuard& { return guard(request); },
             [&] { return describe_wait(local, flag, round); });
}

void NodeSegment::wait_slot_free(std::uint64_t round, const Request& request) {
  if (round <= kSegmentDepth) return;
  for (int local = 0; local < local_size_; ++local) {
    // reached() answers from the flags already seen, inlined here: the
    // slots are almost always free, and wait() is a call per peer.
    if (local != local_rank_ && !reached(local, Flag::kDone, round - kSegmentDepth)) {
      wait(local, Flag::kDone, round - kSegmentDepth, request);
    }
  }
}

void NodeSegment::publish_input(std::uint64_t round, const SharedRange* range) {
  InputSlot& slot = control(local_rank_).inputs[round % kSegmentDepth];
  if (range == nullptr) {
    slot.round.store(0, std::memory_order_relaxed);
    return;
  }
  slot.pid = range->pid;
  slot.id = range->id;
  slot.mapped_bytes = range->mapped_bytes;
  slot.offset = range->offset;
  // Made visible to peers by the kPosted flag's release store.
  slot.round.store(round, std::memory_order_relaxed);
}

const std::byte* NodeSegment::peer_input(int local, std::uint64_t round, const Request& request) {
  const InputSlot& slot = control(local).inputs[round % kSegmentDepth];
  if (slot.round.load(std::memory_order_relaxed) != round) return nullptr;
  const SharedRange range{slot.pid, slot.id, slot.mapped_bytes, slot.offset};
  return peer_mappings_.map(range, request.label(), rank_);
}

}  // namespace collective::internal
