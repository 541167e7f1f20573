#include "algorithms/recursive_doubling.h"

#include "cost/cost_model.h"

#include <algorithm>
#include <cstring>
#include <vector>

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
  std::memcpy(gathered, request.send, bytes);
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
    const auto landed = exchange_check_carrying(
        *request.carried_check, CarriedData{request.send, request.bytes(), CarriedData::kEveryPeer},
        request, state);
    if (request.count == 0) return;
    thread_local std::vector<const void*> inputs;
    inputs.assign(landed.begin(), landed.end());
    inputs[static_cast<std::size_t>(state.rank)] = request.send;
    reduce_sources(request.recv, inputs.data(), state.size, request.count, request.type,
                   request.op, request.op == ReduceOp::kMean ? state.size : 1);
    return;
  }
  if (request.deterministic) return ordered_all_reduce(request, state);
  all_reduce(request, state);
}

// log2 p2 whole-buffer exchanges, two more (fold and unfold) when p is
// not a power of two; every exchange crosses between nodes for some pair,
// all of a node's ranks at once.
std::optional<double> RecursiveDoublingAlgorithm::estimate_seconds(
    const Request& request, const Topology& topology) const {
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
