#include "algorithms/recursive_doubling.h"

#include <array>
#include "cost/cost_model.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "algorithms/chunk_layout.h"
#include "kernels/float32_partials.h"
#include "kernels/multi_source_reduce.h"
#include "kernels/reduce_kernels.h"
#include "transport/mpi/peer_exchange.h"
#include "core/trace.h"
#include "cross_rank_check/cross_rank_check.h"
#include "kernels/plain_copy.h"

namespace collective::internal {
namespace {

// The first message each rank sends, given p: ranks below 2 * extra fold,
// the even one of each pair sending its input to the odd one; every other
// rank's first message goes to its partner of the first doubling round.
// When the algorithm carries the cross-rank check (carries_check), the head
// of that message rides with the fingerprint.
struct DoublingShape {
  int power = 1;  // the largest power of two <= p
  int extra = 0;  // p - power: pairs that fold

  explicit DoublingShape(int p) {
    while (power * 2 <= p) power *= 2;
    extra = p - power;
  }
  int real_rank(int virtual_rank) const {
    return virtual_rank < extra ? virtual_rank * 2 + 1 : virtual_rank + extra;
  }
  int virtual_rank(int rank) const { return rank < 2 * extra ? rank / 2 : rank - extra; }
  // Where `rank`'s first message goes (p >= 2), or CarriedData::kNoPeer for
  // an odd folding rank (its first send is its fold's reduction).
  int first_message_to(int rank) const {
    if (rank < 2 * extra) return rank % 2 == 0 ? rank + 1 : CarriedData::kNoPeer;
    return real_rank(virtual_rank(rank) ^ 1);
  }
};

// 16-bit SUM, MEAN and PROD over more than two ranks keep their partials
// in float32 (kernels/float32_partials.h): the fold and the first round
// send raw 16-bit inputs, every later message is a float32 partial, and
// the last round divides (MEAN) and rounds once. A rank's data is a partial
// once it has reduced something: after its fold, or after the first round.
void all_reduce(const Request& request, CommunicatorState& state) {
  PeerExchange exchange(request, state, "recursive_doubling");
  const int p = state.size;
  const int r = state.rank;
  const std::size_t bytes = request.bytes();
  const bool wide = keeps_float32_partials(request.type, request.op) && p > 2;
  const std::size_t wide_bytes = wide ? request.count * sizeof(float) : bytes;
  auto* output = static_cast<std::byte*>(request.recv);
  const auto* current = static_cast<const std::byte*>(request.send);
  std::byte* incoming = state.scratch_in.get(wide_bytes);
  float* partial = wide ? reinterpret_cast<float*>(state.scratch_work.get(wide_bytes)) : nullptr;
  const DoublingShape shape(p);
  const int power = shape.power;
  const int extra = shape.extra;
  bool current_wide = false;
  // Whether `rank`'s message of the round with `mask` is a float32 partial.
  auto sends_partial = [&](int rank, int mask) { return wide && (mask > 1 || rank < 2 * extra); };

  // With the check to make, it rides with the head of the first message.
  const std::size_t head =
      request.carried_check == nullptr ? 0 : carried_head_bytes(bytes, request.element_bytes());
  std::span<const void* const> landed;
  if (request.carried_check != nullptr) {
    const TraceScope checking("cross-rank check");
    landed = exchange_check_carrying(*request.carried_check,
                                     CarriedData{current, head, shape.first_message_to(r)}, request,
                                     state);
  }
  // What this rank sends `to` first skips the head that rode with its
  // fingerprint; what it receives first from `from` starts with the head
  // that rode with that rank's. A message whose whole content rode with the
  // check is not sent; an empty one still is (it marks the step).
  const int carried_to =
      request.carried_check != nullptr ? shape.first_message_to(r) : CarriedData::kNoPeer;
  auto skip_to = [&](int to) { return to == carried_to ? head : std::size_t{0}; };
  auto all_carried = [&](std::size_t skip) { return skip > 0 && skip == bytes; };
  auto receive_first = [&](void* into, std::size_t size, int from, const char* purpose) {
    std::size_t skip = 0;
    if (request.carried_check != nullptr && shape.first_message_to(from) == r) {
      skip = head;  // only a raw input's message carries a head: size == bytes
      plain_copy(into, landed[static_cast<std::size_t>(from)], head);
    }
    if (all_carried(skip)) return std::optional<PeerExchange::Handle>{};
    return std::optional<PeerExchange::Handle>{
        exchange.recv(static_cast<std::byte*>(into) + skip, size - skip, from, purpose)};
  };
  auto wait_for = [&](std::optional<PeerExchange::Handle> handle) {
    if (handle) exchange.wait(*handle);
  };

  int virtual_rank = r - extra;
  if (r < 2 * extra) {
    if (r % 2 == 0) {
      // Hand the data to the odd partner and wait for the final result.
      const std::size_t skip = skip_to(r + 1);
      if (!all_carried(skip)) {
        exchange.wait(exchange.send(current + skip, bytes - skip, r + 1,
                                    "recursive doubling: fold to partner"));
      }
      exchange.wait(exchange.recv(output, bytes, r + 1, "recursive doubling: result from partner"));
      return;
    }
    wait_for(receive_first(incoming, bytes, r - 1, "recursive doubling: fold from partner"));
    if (wide) {
      reduce_into_partial(partial, true, current, incoming, false, request.count, request.type,
                          request.op);
      current = reinterpret_cast<const std::byte*>(partial);
      current_wide = true;
    } else {
      reduce_buffers(output, current, incoming, request.count, request.type, request.op);
      current = output;
    }
    virtual_rank = r / 2;
  }

  for (int mask = 1; mask < power; mask <<= 1) {
    const TraceScope traced("recursive doubling round");
    const int partner = shape.real_rank(virtual_rank ^ mask);
    const bool first_round = mask == 1;
    const std::size_t skip = first_round ? skip_to(partner) : 0;
    const std::size_t sent_bytes = current_wide ? wide_bytes : bytes;
    const bool partner_wide = sends_partial(partner, mask);
    const std::size_t received_bytes = partner_wide ? wide_bytes : bytes;
    std::optional<PeerExchange::Handle> sent;
    if (!all_carried(skip)) {
      sent =
          exchange.send(current + skip, sent_bytes - skip, partner, "recursive doubling exchange");
    }
    const auto received =
        first_round
            ? receive_first(incoming, received_bytes, partner, "recursive doubling exchange")
            : std::optional<PeerExchange::Handle>{
                  exchange.recv(incoming, received_bytes, partner, "recursive doubling exchange")};
    wait_for(received);
    wait_for(sent);
    // Both partners compute the same commutative combination, so every rank
    // ends with bitwise-identical values.
    const bool last = (mask << 1) >= power;
    const int divisor = last && request.op == ReduceOp::kMean ? p : 1;
    if (!wide) {
      reduce_buffers(output, current, incoming, request.count, request.type, request.op, divisor);
      current = output;
      continue;
    }
    // Into the float32 partial; the last round then divides and rounds once.
    if (!current_wide && !partner_wide) {
      reduce_into_partial(partial, true, current, incoming, false, request.count, request.type,
                          request.op);
    } else if (!current_wide || !partner_wide) {
      const std::byte* narrow_side = current_wide ? incoming : current;
      const std::byte* wide_side = current_wide ? current : incoming;
      reduce_into_partial(partial, true, narrow_side, wide_side, true, request.count, request.type,
                          request.op);
    } else {
      reduce_buffers(partial, current, incoming, request.count, DataType::kFloat32,
                     request.op == ReduceOp::kMean ? ReduceOp::kSum : request.op);
    }
    current = reinterpret_cast<const std::byte*>(partial);
    current_wide = true;
    if (last) round_from_float32(output, partial, request.count, request.type, divisor);
  }

  if (r < 2 * extra) {
    exchange.send(output, bytes, r - 1, "recursive doubling: result to partner");
  }
  exchange.wait_all();
}

// The deterministic form: every rank gathers every rank's whole input in
// ceil(log2 p) steps (Bruck's all-gather: at step k it sends the blocks it
// holds to rank r - 2^k and receives as many from rank r + 2^k, for any p),
// then reduces the p inputs itself in rank order (reduce_sources), so all
// ranks compute the same expression. Latency of recursive doubling; p - 1
// inputs' worth of bytes received per rank, so it suits small buffers.
void ordered_all_reduce(const Request& request, CommunicatorState& state) {
  PeerExchange exchange(request, state, "recursive_doubling");
  const int p = state.size;
  const int r = state.rank;
  const std::size_t bytes = request.bytes();
  // Block i holds the input of rank (r + i) mod p.
  std::byte* gathered = state.scratch_in.get(static_cast<std::size_t>(p) * bytes);
  plain_copy(gathered, request.send, bytes);
  for (int held = 1; held < p; held *= 2) {
    const int blocks = std::min(held, p - held);
    const auto sent = exchange.send(gathered, static_cast<std::size_t>(blocks) * bytes,
                                    ring_index(r - held, p), "ordered all-gather of inputs");
    const auto received = exchange.recv(gathered + static_cast<std::size_t>(held) * bytes,
                                        static_cast<std::size_t>(blocks) * bytes,
                                        ring_index(r + held, p), "ordered all-gather of inputs");
    exchange.wait(received);
    exchange.wait(sent);
  }
  std::vector<const void*> sources(static_cast<std::size_t>(p));
  for (int q = 0; q < p; ++q) {
    sources[static_cast<std::size_t>(q)] =
        gathered + static_cast<std::size_t>(ring_index(q - r, p)) * bytes;
  }
  reduce_sources(request.recv, sources.data(), p, request.count, request.type, request.op,
                 request.op == ReduceOp::kMean ? p : 1);
}

void dissemination_barrier(const Request& request, CommunicatorState& state) {
  PeerExchange exchange(request, state, "dissemination barrier");
  const int p = state.size;
  for (int distance = 1; distance < p; distance <<= 1) {
    const auto sent =
        exchange.send(nullptr, 0, ring_index(state.rank + distance, p), "barrier round");
    const auto received =
        exchange.recv(nullptr, 0, ring_index(state.rank - distance, p), "barrier round");
    exchange.wait(received);
    exchange.wait(sent);
  }
}

}  // namespace

std::span<const CollectiveKind> RecursiveDoublingAlgorithm::serves() const {
  static constexpr std::array kServed = {CollectiveKind::kAllReduce, CollectiveKind::kBarrier};
  return kServed;
}

Support RecursiveDoublingAlgorithm::supports_served(const Request& request,
                                                    const CommunicatorState& state) const {
  (void)state;
  if (request.memory == MemoryKind::kDevice) {
    return Support::no("recursive_doubling serves host buffers only; device buffers need nccl");
  }
  return Support::yes();
}

// Carrying the whole input sends it to each of the p-1 others in one
// round, where the doubling sends it log2 p times in as many rounds: worth
// it while the p-1 copies together stay within one carried message (32 KiB
// at 3 ranks, 10 KiB at 4, 2 KiB at 16), where the call is bound by latency.
// At 2 ranks the one copy may fill the whole carried slot (64 KiB): past one
// message the rest follows at once in a second (cross_rank_check.h), so the
// call still takes one round where the doubling with a carried head takes
// two (64 KiB at 2 hosts: 0.78x MPI with the head, docs/performance.md).
// Larger all_reduce calls carry the check with the head of their first
// message instead.
namespace {
bool carries_whole_input(const Request& request, const CommunicatorState& state) {
  const std::size_t bytes = request.bytes();
  if (state.size == 2) return bytes <= kCarriedInputBytes;
  return bytes * static_cast<std::size_t>(state.size - 1) <= kCarriedInOneMessageBytes;
}
}  // namespace

// The whole-input form reduces in rank order, so it serves deterministic
// calls too; the ordered all-gather of larger ones checks first.
bool RecursiveDoublingAlgorithm::carries_check(const Request& request,
                                               CommunicatorState& state) const {
  return request.kind == CollectiveKind::kAllReduce && request.memory == MemoryKind::kHost &&
         (!request.deterministic || carries_whole_input(request, state)) &&
         check_is_direct_exchange(state);
}

void RecursiveDoublingAlgorithm::run(const Request& request, CommunicatorState& state) const {
  if (request.kind == CollectiveKind::kBarrier) return dissemination_barrier(request, state);
  if (request.carried_check != nullptr && carries_whole_input(request, state)) {
    // The check's one round brings every rank's input; the reduction in
    // rank order gives every rank the same bits.
    const auto inputs = exchange_check_carrying(
        *request.carried_check, CarriedData{request.send, request.bytes(), CarriedData::kEveryPeer},
        request, state);
    if (request.count == 0) return;
    reduce_sources(request.recv, inputs.data(), state.size, request.count, request.type, request.op,
                   request.op == ReduceOp::kMean ? state.size : 1);
    return;
  }
  if (request.deterministic) return ordered_all_reduce(request, state);
  all_reduce(request, state);
}

// log2 p2 whole-buffer exchanges, two more (fold and unfold) when p is
// not a power of two; every exchange crosses between nodes for some pair,
// all of a node's ranks at once.
std::optional<double> RecursiveDoublingAlgorithm::estimate_seconds(const Request& request,
                                                                   const Topology& topology) const {
  if (topology.size() < 1 || request.kind != CollectiveKind::kAllReduce) return std::nullopt;
  const Shape shape = shape_of(request, topology);
  const int flows = shape.nodes > 1 ? shape.per_node : 1;
  if (request.deterministic) {
    // The ordered form: ceil(log2 p) steps whose blocks double, p - 1
    // inputs received and p reduced.
    double seconds = kCallSeconds;
    for (int held = 1; held < shape.ranks; held *= 2) {
      seconds += flat_step_seconds(topology, shape,
                                   std::min(held, shape.ranks - held) * shape.bytes, flows);
    }
    return seconds +
           (shape.ranks - 1) * shape.bytes / kReduceBytesPerSecond * shape.oversubscription;
  }
  int power = 1;
  int exchanges = 0;
  while (power * 2 <= shape.ranks) {
    power *= 2;
    ++exchanges;
  }
  const double steps = exchanges + (power == shape.ranks ? 0 : 2);
  return kCallSeconds + steps * flat_step_seconds(topology, shape, shape.bytes, flows) +
         exchanges * shape.bytes / kReduceBytesPerSecond * shape.oversubscription;
}

}  // namespace collective::internal
