// The repeat-call fast path: the last call whose own checks passed on this
// rank, with what they resolved (the memory kind and the algorithm). A call
// with the same arguments passes the same argument checks and gets the same
// choice (both depend only on the arguments and on what is fixed for the
// communicator), so dispatch reuses the verdict instead of checking and
// selecting again: a solver's thousands of identical small all-reduces skip
// about 300 instructions each. The cross-rank check still runs every call.
#pragma once

#include "collective/options.h"
#include "core/request.h"

namespace collective::internal {

class CollectiveAlgorithm;

struct CheckedCallMemo {
  // `request` as the checks saw it: after the options were applied, with
  // its declared memory kind (before resolution).
  bool matches(const Request& request) const {
    return algorithm != nullptr && request.kind == key.kind && request.send == key.send &&
           request.recv == key.recv && request.count == key.count && request.type == key.type &&
           request.op == key.op && request.root == key.root && request.requested == key.requested &&
           request.forced == key.forced && request.memory == key.memory &&
           request.deterministic == key.deterministic && request.timeout == key.timeout &&
           request.call_tag == key.call_tag && request.point_to_point == nullptr &&
           has_no_vectors(request);
  }
  // The v-forms' counts and displacements are not compared (they would
  // cost what the checks cost): those calls take the full path.
  static bool has_no_vectors(const Request& request) {
    return request.send_counts.empty() && request.send_displacements.empty() &&
           request.recv_counts.empty() && request.recv_displacements.empty();
  }
  // `request` after its checks passed (memory resolved), its declared
  // memory kind and the algorithm chosen for it.
  void remember(const Request& request, MemoryKind declared, const CollectiveAlgorithm* chosen) {
    key = request;
    key.memory = declared;
    resolved_memory = request.memory;
    algorithm = chosen;
  }

  const CollectiveAlgorithm* algorithm = nullptr;  // nullptr: nothing remembered
  Request key;                                     // what matches() compares
  MemoryKind resolved_memory = MemoryKind::kHost;
};

}  // namespace collective::internal
