#include "algorithms/bruck.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "cost/cost_model.h"
#include "transport/mpi/peer_exchange.h"
#include "kernels/plain_copy.h"

namespace collective::internal {
namespace {

// Rank r first rotates its blocks so that slot i holds the block for rank
// r+i. In the round of bit b it sends every slot whose index has bit b set
// to rank r+b and receives the same slots from r-b: a block for r+i moves
// by the bits of i, one round each, and after the last round slot i holds
// the block that rank r-i sent to r. The send buffer is read only by the
// first rotation and the receive buffer written only by the last, so the
// in-place form (send == recv) needs nothing more.
void run_bruck(const Request& request, CommunicatorState& state) {
  PeerExchange exchange(request, state, "bruck");
  const int p = state.size;
  const int r = state.rank;
  const std::size_t block = request.count * request.element_bytes();
  // count is the same on every rank (the cross-rank check compares it):
  // empty blocks need no message at all.
  if (block == 0) return;
  const auto slots = static_cast<std::size_t>(p);
  const std::size_t most_sent = (slots / 2) * block;  // slots with a given bit set: at most p/2
  std::byte* rotated = state.scratch_work.get(std::max<std::size_t>(1, slots * block));
  std::byte* packed = state.scratch_in.get(std::max<std::size_t>(1, 2 * most_sent));
  std::byte* arrived = packed + most_sent;
  const auto* send = static_cast<const std::byte*>(request.send);
  auto* recv = static_cast<std::byte*>(request.recv);
  auto slot = [&](int i) { return rotated + static_cast<std::size_t>(i) * block; };
  auto ring = [&](int i) { return static_cast<std::size_t>(((i % p) + p) % p); };

  for (int i = 0; i < p; ++i) plain_copy(slot(i), send + ring(r + i) * block, block);
  for (int bit = 1, round = 0; bit < p; bit <<= 1, ++round) {
    std::size_t bytes = 0;
    for (int i = bit; i < p; ++i) {
      if ((i & bit) == 0) continue;
      plain_copy(packed + bytes, slot(i), block);
      bytes += block;
    }
    const int to = static_cast<int>(ring(r + bit));
    const int from = static_cast<int>(ring(r - bit));
    const auto first = exchange.recv(arrived, bytes, from,
                                     "bruck all_to_all: slots from the rank 2^step below", round);
    exchange.send(packed, bytes, to, "bruck all_to_all: slots to the rank 2^step above", round);
    exchange.wait_range(first, first + 2);
    std::size_t at = 0;
    for (int i = bit; i < p; ++i) {
      if ((i & bit) == 0) continue;
      plain_copy(slot(i), arrived + at, block);
      at += block;
    }
  }
  for (int q = 0; q < p; ++q)
    plain_copy(recv + static_cast<std::size_t>(q) * block, slot(static_cast<int>(ring(r - q))),
               block);
}

}  // namespace

std::span<const CollectiveKind> BruckAlgorithm::serves() const {
  static constexpr std::array kServed = {CollectiveKind::kAllToAll};
  return kServed;
}

Support BruckAlgorithm::supports_served(const Request& request,
                                        const CommunicatorState& state) const {
  (void)state;
  if (request.memory == MemoryKind::kDevice) {
    return Support::no("bruck serves host buffers only; device buffers need nccl");
  }
  return Support::yes();
}

void BruckAlgorithm::run(const Request& request, CommunicatorState& state) const {
  switch (request.kind) {
    case CollectiveKind::kAllToAll: return run_bruck(request, state);
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
    case CollectiveKind::kBarrier:
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kAllGatherV:
    case CollectiveKind::kReduceScatterV:
    case CollectiveKind::kGather:
    case CollectiveKind::kGatherV:
    case CollectiveKind::kScatter:
    case CollectiveKind::kScatterV: refuse_unserved(request, state);
  }
}

// ceil(log2 p) rounds of one message each way, every round paying the
// link's latency and a message's software cost; a round moves the slots
// with its bit set (at most p/2 blocks), spread over the peers as
// pairwise's are; and the p blocks are copied 2 + ceil(log2 p) times in
// cache (the two rotations; packing and unpacking, about p/2 blocks each,
// in every round).
std::optional<double> BruckAlgorithm::estimate_seconds(const Request& request,
                                                       const Topology& topology) const {
  if (topology.size() < 1 || request.kind != CollectiveKind::kAllToAll) return std::nullopt;
  const Shape shape = shape_of(request, topology);
  const double p = shape.ranks;
  const double rounds = p > 1 ? std::ceil(std::log2(p)) : 0.0;
  const double sent_per_round = std::floor(p / 2.0) * shape.bytes;
  const double copied = (2.0 + rounds) * p * shape.bytes;
  return kCallSeconds +
         rounds * (message_latency_seconds(topology, shape) +
                   link_cost(LinkKind::kLocalMpi, topology).latency_seconds +
                   spread_exchange_seconds(topology, shape, sent_per_round)) +
         node_work_seconds(shape, 0.0, copied, 0.0);
}

}  // namespace collective::internal
