// The repeat-call fast path: the last call whose own checks passed on this
// rank, with what they resolved (the memory kind and the algorithm). A call
// with the same arguments passes the same argument checks and gets the same
// choice (both depend only on the arguments and on what is fixed for the
// communicator), so dispatch reuses the verdict instead of checking and
// selecting again: a solver's thousands of identical small all-reduces skip
// about 300 instructions each. The cross-rank check still runs every call.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "collective/algorithm.h"
#include "collective/options.h"
#include "collective/types.h"
#include "core/request.h"

namespace collective::internal {

class CollectiveAlgorithm;

struct CheckedCallMemo {
  // `request` as the checks saw it: after the options were applied, with
  // its declared memory kind (before resolution).
  bool matches(const Request& request) const {
    return algorithm != nullptr && request.kind == kind && request.send == send &&
           request.recv == recv && request.count == count && request.type == type &&
           request.op == op && request.root == root && request.requested == requested &&
           request.forced == forced && request.memory == declared_memory &&
           request.deterministic == deterministic && request.timeout == timeout &&
           request.call_tag == call_tag && request.point_to_point == nullptr &&
           has_no_vectors(request);
  }
  // The v-forms' counts and displacements are not compared (they would
  // cost what the checks cost): those calls take the full path.
  static bool has_no_vectors(const Request& request) {
    return request.send_counts.empty() && request.send_displacements.empty() &&
           request.recv_counts.empty() && request.recv_displacements.empty();
  }
  void remember(const Request& request, MemoryKind declared, const CollectiveAlgorithm* chosen) {
    kind = request.kind;
    send = request.send;
    recv = request.recv;
    count = request.count;
    type = request.type;
    op = request.op;
    root = request.root;
    requested = request.requested;
    forced = request.forced;
    declared_memory = declared;
    resolved_memory = request.memory;
    deterministic = request.deterministic;
    timeout = request.timeout;
    call_tag = request.call_tag;
    algorithm = chosen;
  }

  const CollectiveAlgorithm* algorithm = nullptr;  // nullptr: nothing remembered
  CollectiveKind kind = CollectiveKind::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  Algorithm requested = Algorithm::kAuto;
  bool forced = false;
  MemoryKind declared_memory = MemoryKind::kHost;
  MemoryKind resolved_memory = MemoryKind::kHost;
  bool deterministic = false;
  std::chrono::milliseconds timeout{0};
  std::uint64_t call_tag = 0;
};

}  // namespace collective::internal
