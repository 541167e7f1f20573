#include "algorithms/recursive_doubling.h"

#include "cost/cost_model.h"

#include "algorithms/chunk_layout.h"
#include "kernels/multi_source_reduce.h"
#include "kernels/reduce_kernels.h"
#include "transport/mpi/peer_exchange.h"
#include "core/trace.h"
#include "validation/cross_rank_check.h"

namespace collective::internal {
namespace {

void all_reduce(const Request& request, CommunicatorState& state) {
  PeerExchange exchange(request, state, "recursive_doubling");
  const int p = state.size;
  const int r = state.rank;
  const std::size_t bytes = request.bytes();
  auto* output = static_cast<std::byte*>(request.recv);
  const auto* current = static_cast<const std::byte*>(request.send);
  std::byte* incoming = state.scratch_in.get(bytes);

  int power = 1;
  while (power * 2 <= p) power *= 2;
  const int extra = p - power;  // ranks below 2*extra pair up and fold

  int virtual_rank = r - extra;
  if (r < 2 * extra) {
    if (r % 2 == 0) {
      // Hand the data to the odd partner and wait for the final result.
      exchange.wait(exchange.send(current, bytes, r + 1, "recursive doubling: fold to partner"));
      exchange.wait(exchange.recv(output, bytes, r + 1, "recursive doubling: result from partner"));
      return;
    }
    exchange.wait(exchange.recv(incoming, bytes, r - 1, "recursive doubling: fold from partner"));
    reduce_buffers(output, current, incoming, request.count, request.type, request.op);
    current = output;
    virtual_rank = r / 2;
  }

  for (int mask = 1; mask < power; mask <<= 1) {
    const TraceScope traced("recursive doubling round");
    const int partner_virtual = virtual_rank ^ mask;
    const int partner =
        partner_virtual < extra ? partner_virtual * 2 + 1 : partner_virtual + extra;
    const auto sent = exchange.send(current, bytes, partner, "recursive doubling exchange");
    const auto received = exchange.recv(incoming, bytes, partner, "recursive doubling exchange");
    exchange.wait(received);
    exchange.wait(sent);
    // Both partners compute the same commutative combination, so every rank
    // ends with bitwise-identical values.
    const bool last = (mask << 1) >= power;
    const int divisor = last && request.op == ReduceOp::kMean ? p : 1;
    reduce_buffers(output, current, incoming, request.count, request.type, request.op, divisor);
    current = output;
  }

  if (r < 2 * extra) {
    exchange.send(output, bytes, r - 1, "recursive doubling: result to partner");
  }
  exchange.wait_all();
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

Support RecursiveDoublingAlgorithm::supports(const Request& request,
                                             const CommunicatorState& state) const {
  (void)state;
  if (request.kind != CollectiveKind::kAllReduce && request.kind != CollectiveKind::kBarrier) {
    return Support::no("recursive_doubling implements all_reduce and barrier only (use ring or mpi)");
  }
  if (request.memory == MemoryKind::kDevice) {
    return Support::no("recursive_doubling serves host buffers only; device buffers need nccl");
  }
  return Support::yes();
}

// Carrying sends the whole input to each of the p-1 others in one round,
// where the doubling sends it log2 p times in as many rounds: worth it while
// the p-1 copies together stay within one carried slot (64 KiB at 2 ranks,
// 21 KiB at 4, 4 KiB at 16), where the call is bound by latency.
bool RecursiveDoublingAlgorithm::carries_check(const Request& request,
                                               CommunicatorState& state) const {
  return request.kind == CollectiveKind::kAllReduce && request.memory == MemoryKind::kHost &&
         request.bytes() * static_cast<std::size_t>(state.size - 1) <= kCarriedInputBytes &&
         check_is_direct_exchange(state);
}

void RecursiveDoublingAlgorithm::run(const Request& request, CommunicatorState& state) const {
  if (request.kind == CollectiveKind::kBarrier) return dissemination_barrier(request, state);
  if (request.carried_check != nullptr) {
    // The check's one round brings every rank's input; the reduction in
    // rank order gives every rank the same bits.
    const auto inputs = exchange_carrying_input(*request.carried_check, request.send,
                                                request.bytes(), request, state);
    if (request.count == 0) return;
    reduce_sources(request.recv, inputs.data(), state.size, request.count, request.type,
                   request.op, request.op == ReduceOp::kMean ? state.size : 1);
    return;
  }
  all_reduce(request, state);
}

// log2 p2 whole-buffer exchanges, two more (fold and unfold) when p is
// not a power of two; every exchange crosses between nodes for some pair,
// all of a node's ranks at once.
std::optional<double> RecursiveDoublingAlgorithm::estimate_seconds(
    const Request& request, const Topology& topology) const {
  if (topology.size() < 1 || request.kind != CollectiveKind::kAllReduce) return std::nullopt;
  const Shape shape = shape_of(request, topology);
  int power = 1;
  int exchanges = 0;
  while (power * 2 <= shape.ranks) {
    power *= 2;
    ++exchanges;
  }
  const double steps = exchanges + (power == shape.ranks ? 0 : 2);
  const int flows = shape.nodes > 1 ? shape.per_node : 1;
  return kCallSeconds + steps * flat_step_seconds(topology, shape, shape.bytes, flows) +
         exchanges * shape.bytes / kReduceBytesPerSecond * shape.oversubscription;
}

}  // namespace collective::internal
