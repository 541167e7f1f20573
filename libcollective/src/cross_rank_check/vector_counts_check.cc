#include "cross_rank_check/vector_counts_check.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <sstream>
#include <vector>

#include "transport/mpi/peer_exchange.h"

namespace collective::internal {
namespace {

// No count: the pair exchanges nothing in this call (gather_v between two
// ranks neither of which is the root).
constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();

// A bijection of 64-bit values (splitmix64's finalizer): distinct counts of
// one pair always give distinct terms.
std::uint64_t mix_bijective(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t pair_hash(int sender, int receiver, std::uint64_t count) {
  const std::uint64_t pair =
      mix_bijective((static_cast<std::uint64_t>(static_cast<std::uint32_t>(sender)) << 32) |
                    static_cast<std::uint32_t>(receiver));
  return mix_bijective(pair ^ count);
}

std::uint64_t entry(std::span<const std::size_t> counts, int index) {
  return counts[static_cast<std::size_t>(index)];
}

// What `rank` sends `peer` in this call, or kNone.
std::uint64_t sends_to(const Request& request, int rank, int peer) {
  if (request.kind == CollectiveKind::kAllToAllV) {
    // In place, recv's layout is both.
    return entry(request.send_counts.empty() ? request.recv_counts : request.send_counts, peer);
  }
  if (request.kind == CollectiveKind::kGatherV) return peer == request.root ? request.count : kNone;
  if (request.kind == CollectiveKind::kScatterV && rank == request.root) {
    return entry(request.send_counts, peer);
  }
  return kNone;
}

// What `rank` expects from `peer` in this call, or kNone.
std::uint64_t expects_from(const Request& request, int rank, int peer) {
  if (request.kind == CollectiveKind::kAllToAllV) return entry(request.recv_counts, peer);
  if (request.kind == CollectiveKind::kGatherV && rank == request.root) {
    return entry(request.recv_counts, peer);
  }
  if (request.kind == CollectiveKind::kScatterV)
    return peer == request.root ? request.count : kNone;
  return kNone;
}

// One rank's finding, gathered by every rank so that all name the same one.
struct Finding {
  std::uint64_t found = 0;   // how many disagreements this rank found
  std::int64_t first = -1;   // pairs: the sender; recv_counts: the rank that differs from rank 0
  std::int64_t second = -1;  // pairs: the receiver; recv_counts: the first differing index
  std::uint64_t first_value = 0;   // pairs: sent; recv_counts: rank 0's entry
  std::uint64_t second_value = 0;  // pairs: expected; recv_counts: that rank's entry
};

// Dissemination all-gather of every rank's finding into all[rank]
// (ceil(log2 p) rounds; `held` has room for p findings).
void gather_findings(PeerExchange& exchange, const Finding& mine, Finding* all, Finding* held,
                     int rank, int size) {
  held[0] = mine;  // held[i] comes from rank (rank + i) % size
  for (int distance = 1, round = 0; distance < size; distance *= 2, ++round) {
    const int blocks = std::min(distance, size - distance);
    const std::size_t bytes = static_cast<std::size_t>(blocks) * sizeof(Finding);
    exchange.recv(&held[distance], bytes, (rank + distance) % size,
                  "cross-rank check: which counts disagree, relayed by that rank", round);
    exchange.send(held, bytes, (rank - distance + size) % size,
                  "cross-rank check: which counts disagree, to relay", round);
    exchange.wait_all();
  }
  for (int i = 0; i < size; ++i) all[(rank + i) % size] = held[i];
}

// Each rank tells every other what it sends it; the receiver of each pair
// compares with what it expects.
Finding find_pair_disagreement(const Request& request, PeerExchange& exchange, int rank, int size) {
  std::vector<std::uint64_t> outgoing(static_cast<std::size_t>(size));
  std::vector<std::uint64_t> incoming(static_cast<std::size_t>(size), kNone);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    outgoing[static_cast<std::size_t>(peer)] = sends_to(request, rank, peer);
    exchange.recv(&incoming[static_cast<std::size_t>(peer)], sizeof(std::uint64_t), peer,
                  "cross-rank check: what that rank sends this one");
    exchange.send(&outgoing[static_cast<std::size_t>(peer)], sizeof(std::uint64_t), peer,
                  "cross-rank check: what this rank sends that one");
  }
  exchange.wait_all();
  Finding finding;
  for (int sender = 0; sender < size; ++sender) {
    if (sender == rank) continue;
    const std::uint64_t sent = incoming[static_cast<std::size_t>(sender)];
    const std::uint64_t expected = expects_from(request, rank, sender);
    if (sent == expected) continue;
    if (finding.found++ == 0) finding = {1, sender, rank, sent, expected};
  }
  return finding;
}

// Rank 0 sends its recv_counts to every other rank, which compares.
Finding find_recv_counts_disagreement(const Request& request, PeerExchange& exchange, int rank,
                                      int size) {
  const std::size_t bytes = static_cast<std::size_t>(size) * sizeof(std::size_t);
  std::vector<std::size_t> reference(static_cast<std::size_t>(size));
  if (rank == 0) {
    for (int peer = 1; peer < size; ++peer) {
      exchange.send(request.recv_counts.data(), bytes, peer,
                    "cross-rank check: rank 0's recv_counts");
    }
    exchange.wait_all();
    return {};
  }
  exchange.recv(reference.data(), bytes, 0, "cross-rank check: rank 0's recv_counts");
  exchange.wait_all();
  for (int index = 0; index < size; ++index) {
    const std::size_t theirs = reference[static_cast<std::size_t>(index)];
    const std::size_t own = entry(request.recv_counts, index);
    if (theirs != own) return {1, rank, index, theirs, own};
  }
  return {};
}

// The finding that comes first (every rank picks the same) and the total.
Finding first_finding(std::span<const Finding> all, std::uint64_t& total) {
  Finding first;
  total = 0;
  for (const Finding& finding : all) {
    if (finding.found == 0) continue;
    total += finding.found;
    if (first.found == 0 || finding.first < first.first ||
        (finding.first == first.first && finding.second < first.second)) {
      first = finding;
    }
  }
  return first;
}

std::string describe_value(std::uint64_t value) {
  return value == kNone ? std::string("none") : std::to_string(value);
}

std::string pair_cause(const Request& request, const Finding& first, std::uint64_t total) {
  std::ostringstream cause;
  cause << "rank " << first.first << " sends " << describe_value(first.first_value)
        << " elements to rank " << first.second << ", which expects "
        << describe_value(first.second_value) << " from rank " << first.first;
  if (total > 1) cause << " (" << total << " pairs of ranks disagree; this is the first)";
  if (request.kind == CollectiveKind::kAllToAllV) {
    cause << ". send_counts[j] on rank i must equal recv_counts[i] on rank j";
  } else if (request.kind == CollectiveKind::kGatherV) {
    cause << ". Each rank's send_count must equal recv_counts[rank] on the root";
  } else {
    cause << ". send_counts[q] on the root must equal recv_count on rank q";
  }
  return cause.str();
}

std::string recv_counts_cause(const Finding& first, std::uint64_t total) {
  std::ostringstream cause;
  cause << "the ranks' recv_counts differ: recv_counts[" << first.second << "] is "
        << first.first_value << " on rank 0 and " << first.second_value << " on rank "
        << first.first;
  if (total > 1) cause << " (" << total << " ranks differ from rank 0; this is the first)";
  cause << ". recv_counts must be the same on every rank";
  return cause.str();
}

}  // namespace

bool has_pair_counts(CollectiveKind kind) {
  return kind == CollectiveKind::kAllToAllV || kind == CollectiveKind::kGatherV ||
         kind == CollectiveKind::kScatterV;
}

bool has_agreed_recv_counts(CollectiveKind kind) {
  return kind == CollectiveKind::kAllGatherV || kind == CollectiveKind::kReduceScatterV;
}

std::uint64_t pair_count_term(const Request& request, int rank) {
  // Unsigned arithmetic: the sum wraps, and only whether it is zero matters.
  std::uint64_t term = 0;
  const auto add_pairs = [&](int peers) {
    for (int peer = 0; peer < peers; ++peer) {
      if (peer == rank) continue;  // a rank's block to itself is checked locally
      const std::uint64_t sent = sends_to(request, rank, peer);
      if (sent != kNone) term += pair_hash(rank, peer, sent);
      const std::uint64_t expected = expects_from(request, rank, peer);
      if (expected != kNone) term -= pair_hash(peer, rank, expected);
    }
  };
  if (request.kind == CollectiveKind::kAllToAllV) {
    add_pairs(static_cast<int>(request.recv_counts.size()));
  } else if (request.kind == CollectiveKind::kGatherV) {
    if (rank == request.root) add_pairs(static_cast<int>(request.recv_counts.size()));
    else term += pair_hash(rank, request.root, request.count);
  } else if (request.kind == CollectiveKind::kScatterV) {
    if (rank == request.root) add_pairs(static_cast<int>(request.send_counts.size()));
    else term -= pair_hash(request.root, rank, request.count);
  }
  return term;
}

std::uint64_t hash_recv_counts(std::span<const std::size_t> recv_counts) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const std::size_t value : recv_counts) {
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= (static_cast<std::uint64_t>(value) >> (8 * byte)) & 0xff;
      hash *= 1099511628211ull;
    }
  }
  return hash;
}

std::string describe_count_disagreement(const Request& request, CommunicatorState& state) {
  const int rank = state.rank;
  const int size = state.size;
  PeerExchange exchange(request, state, "cross-rank check");
  const Finding mine = has_pair_counts(request.kind)
                           ? find_pair_disagreement(request, exchange, rank, size)
                           : find_recv_counts_disagreement(request, exchange, rank, size);
  std::vector<Finding> all(static_cast<std::size_t>(size)), held(static_cast<std::size_t>(size));
  gather_findings(exchange, mine, all.data(), held.data(), rank, size);
  std::uint64_t total = 0;
  const Finding first = first_finding(all, total);
  if (first.found == 0) {
    // The fingerprints' sums differed but no pair does: several
    // disagreements cannot cancel into this, so a rank's terms were
    // computed from other counts than it exchanged here.
    return "the ranks' counts disagree by their fingerprints, but no disagreeing pair was found";
  }
  return has_pair_counts(request.kind) ? pair_cause(request, first, total)
                                       : recv_counts_cause(first, total);
}

}  // namespace collective::internal
