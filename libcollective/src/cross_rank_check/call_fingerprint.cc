#include "cross_rank_check/call_fingerprint.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include "collective/in_tree/collectives.h"
#include "collective/types.h"
#include "core/rank_list.h"

namespace collective::internal {
namespace {

bool has_op(CollectiveKind kind) { return traits_of(kind).reduces; }

bool has_root(CollectiveKind kind) { return traits_of(kind).rooted; }

// FNV-1a over the values: the v-forms whose recv_counts every rank must
// hold alike compare this, not the counts themselves.
std::uint64_t hash_counts(std::span<const std::size_t> counts) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const std::size_t value : counts) {
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= (static_cast<std::uint64_t>(value) >> (8 * byte)) & 0xff;
      hash *= 1099511628211ull;
    }
  }
  return hash;
}

// What the fingerprint's count field holds: the count every rank passes
// alike, or for all_gather_v and reduce_scatter_v a hash of recv_counts
// (the same on every rank). The other v-forms' counts differ by rank and
// are compared pair by pair, not here.
std::uint64_t agreed_count(const Request& request) {
  switch (request.kind) {
    case CollectiveKind::kBarrier:
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kGatherV:
    case CollectiveKind::kScatterV: return 0;
    case CollectiveKind::kAllGatherV:
    case CollectiveKind::kReduceScatterV: return hash_counts(request.recv_counts);
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kGather:
    case CollectiveKind::kScatter: return request.count;
  }
  return request.count;
}

CallFingerprint describe_call(const Request& request, int rank) {
  CallFingerprint print;
  print.sequence = request.sequence;
  print.call_tag = request.call_tag;
  print.rank = rank;
  print.kind = static_cast<std::int8_t>(request.kind);
  const bool barrier = request.kind == CollectiveKind::kBarrier;
  print.count = agreed_count(request);
  print.type = barrier ? -1 : static_cast<std::int8_t>(request.type);
  print.op = has_op(request.kind) ? static_cast<std::int8_t>(request.op) : -1;
  print.root = has_root(request.kind) ? request.root : -1;
  print.requested = static_cast<std::int8_t>(request.requested);
  print.algorithm = print.requested;
  print.deterministic = has_op(request.kind) && request.deterministic ? 1 : 0;
  return print;
}

// The fields that must agree, in the order they are printed.
enum Field { kKind, kCount, kType, kOp, kRoot, kAlgorithm, kDeterministic, kTag, kNumFields };

bool same_field(const CallFingerprint& a, const CallFingerprint& b, Field field) {
  switch (field) {
    case kKind: return a.kind == b.kind;
    case kCount: return a.count == b.count;
    case kType: return a.type == b.type;
    case kOp: return a.op == b.op;
    case kRoot: return a.root == b.root;
    case kAlgorithm: return a.algorithm == b.algorithm;
    case kDeterministic: return a.deterministic == b.deterministic;
    case kTag: return a.call_tag == b.call_tag;
    case kNumFields:
    default: return true;
  }
}

bool same_call(const CallFingerprint& a, const CallFingerprint& b) {
  for (int field = 0; field < kNumFields; ++field) {
    if (!same_field(a, b, static_cast<Field>(field))) return false;
  }
  return true;
}

void print_field(std::ostream& out, const CallFingerprint& print, Field field) {
  switch (field) {
    case kKind: out << to_string(static_cast<CollectiveKind>(print.kind)); return;
    case kCount:
      if (traits_of(static_cast<CollectiveKind>(print.kind)).geometry ==
          CollectiveGeometry::kVector) {
        char hex[19];
        std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(print.count));
        out << "recv_counts=(hash " << hex << ")";
      } else {
        out << "count=" << print.count;
      }
      return;
    case kType: out << "type=" << to_string(static_cast<DataType>(print.type)); return;
    case kOp:
      if (print.op < 0) out << "op=none";
      else out << "op=" << to_string(static_cast<ReduceOp>(print.op));
      return;
    case kRoot:
      if (print.root < 0) out << "root=none";
      else out << "root=" << print.root;
      return;
    case kAlgorithm:
      out << "algorithm=" << to_string(static_cast<Algorithm>(print.algorithm));
      if (print.requested != print.algorithm) {
        out << " (requested " << to_string(static_cast<Algorithm>(print.requested)) << ")";
      }
      return;
    case kDeterministic:
      out << "deterministic=" << (print.deterministic ? "true" : "false");
      return;
    case kTag: {
      char hex[19];
      std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(print.call_tag));
      out << "tag=" << (print.call_tag == 0 ? std::string("none") : std::string(hex));
      return;
    }
    case kNumFields:
    default: return;
  }
}

// At most this many distinct calls are spelled out in one message.
constexpr std::size_t kMaxGroupsShown = 8;

Verdict mismatch(std::span<const CallFingerprint> all) {
  // Ranks grouped by identical calls, groups in order of their first rank.
  std::vector<std::vector<int>> groups;
  std::vector<const CallFingerprint*> representative;
  for (const CallFingerprint& print : all) {
    std::size_t g = 0;
    while (g < groups.size() && !same_call(*representative[g], print)) ++g;
    if (g == groups.size()) {
      groups.emplace_back();
      representative.push_back(&print);
    }
    groups[g].push_back(print.rank);
  }
  bool differs[kNumFields] = {};
  for (int field = 0; field < kNumFields; ++field) {
    for (const CallFingerprint* print : representative) {
      differs[field] |= !same_field(*representative[0], *print, static_cast<Field>(field));
    }
  }
  std::ostringstream cause;
  cause << "the ranks disagree on this call: ";
  for (std::size_t g = 0; g < groups.size() && g < kMaxGroupsShown; ++g) {
    if (g > 0) cause << ", ";
    cause << rank_list(groups[g]);
    const CallFingerprint& print = *representative[g];
    const auto kind = static_cast<CollectiveKind>(print.kind);
    for (int field = 0; field < kNumFields; ++field) {
      const auto f = static_cast<Field>(field);
      const bool relevant = (f != kOp || has_op(kind)) && (f != kRoot || has_root(kind)) &&
                            (f != kDeterministic || print.deterministic) &&
                            (f != kTag || print.call_tag != 0) &&
                            ((f != kCount && f != kType) || kind != CollectiveKind::kBarrier);
      // Different collectives: each with its own arguments; the same
      // collective: only what differs.
      if (differs[kKind] ? relevant && f != kAlgorithm : differs[f]) {
        cause << " ";
        print_field(cause, print, f);
      }
    }
  }
  if (groups.size() > kMaxGroupsShown) {
    cause << " and " << groups.size() - kMaxGroupsShown << " more different calls";
  }
  cause << ". Every rank must make the same collective calls in the same order, with the same "
           "count, type, op, root, algorithm, deterministic option and call tag";
  return Verdict{Verdict::kMismatch, false, cause.str()};
}

}  // namespace

CallFingerprint fingerprint_of(const Request& request, Algorithm selected, int rank) {
  CallFingerprint print = describe_call(request, rank);
  print.algorithm = static_cast<std::int8_t>(selected);
  return print;
}

CallFingerprint rejected_fingerprint(const Request& request, int rank, bool unsupported,
                                     const std::string& cause) {
  CallFingerprint print = describe_call(request, rank);
  print.status =
      unsupported ? CallFingerprint::kRejectedUnsupported : CallFingerprint::kRejectedInvalid;
  const std::size_t room = sizeof(print.rejection) - 1;
  if (cause.size() <= room) {
    std::memcpy(print.rejection, cause.data(), cause.size());
  } else {
    std::memcpy(print.rejection, cause.data(), room - 3);
    std::memcpy(print.rejection + room - 3, "...", 3);
  }
  return print;
}

Verdict judge(std::span<const CallFingerprint> all) {
  std::vector<const CallFingerprint*> rejecting;
  for (const CallFingerprint& print : all) {
    if (print.rejected()) rejecting.push_back(&print);
  }
  if (!rejecting.empty()) {
    Verdict verdict{Verdict::kRejected, true, ""};
    std::ostringstream cause;
    std::vector<int> ranks;
    for (const CallFingerprint* print : rejecting) {
      ranks.push_back(print->rank);
      verdict.unsupported &= print->status == CallFingerprint::kRejectedUnsupported;
    }
    cause << rank_list(ranks) << (ranks.size() == 1 ? " rejected its" : " rejected their")
          << " arguments for this call, so no rank ran it: ";
    for (std::size_t i = 0; i < rejecting.size() && i < kMaxGroupsShown; ++i) {
      if (i > 0) cause << "; ";
      std::string text(rejecting[i]->rejection,
                       strnlen(rejecting[i]->rejection, sizeof(rejecting[i]->rejection)));
      cause << "rank " << rejecting[i]->rank << ": " << text;
    }
    if (rejecting.size() > kMaxGroupsShown) cause << "; ...";
    verdict.cause = cause.str();
    return verdict;
  }
  for (const CallFingerprint& print : all) {
    if (!same_call(print, all[0])) return mismatch(all);
  }
  return Verdict{};
}

bool agrees_with(const CallFingerprint& theirs, int from, const CallFingerprint& mine) {
  return !theirs.rejected() && !mine.rejected() && theirs.rank == from &&
         theirs.sequence == mine.sequence && same_call(theirs, mine);
}

}  // namespace collective::internal
