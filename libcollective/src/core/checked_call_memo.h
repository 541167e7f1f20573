// The repeat-call fast path: the last call whose own checks passed on this
// rank, with what they resolved (the memory kind and the algorithm). A call
// with the same arguments passes the same argument checks and gets the same
// choice (both depend only on the arguments and on what is fixed for the
// communicator), so dispatch reuses the verdict instead of checking and
// selecting again: a solver's thousands of identical small all-reduces skip
// about 300 instructions each, and the v-forms their allocating checks. The
// cross-rank check still runs every call.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <vector>

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
           same(send_counts, request.send_counts) &&
           same(send_displacements, request.send_displacements) &&
           same(recv_counts, request.recv_counts) &&
           same(recv_displacements, request.recv_displacements);
  }
  // `request` after its checks passed (memory resolved), its declared
  // memory kind and the algorithm chosen for it. The v-forms' counts and
  // displacements are copied (the caller may change its arrays): comparing
  // them is a few instructions per rank, where their checks allocate and
  // sort.
  void remember(const Request& request, MemoryKind declared, const CollectiveAlgorithm* chosen) {
    key = request;
    key.memory = declared;
    send_counts.assign(request.send_counts.begin(), request.send_counts.end());
    send_displacements.assign(request.send_displacements.begin(), request.send_displacements.end());
    recv_counts.assign(request.recv_counts.begin(), request.recv_counts.end());
    recv_displacements.assign(request.recv_displacements.begin(), request.recv_displacements.end());
    key.send_counts = key.send_displacements = key.recv_counts = key.recv_displacements = {};
    resolved_memory = request.memory;
    algorithm = chosen;
    fingerprinted = false;
  }

  const CollectiveAlgorithm* algorithm = nullptr;  // nullptr: nothing remembered
  Request key;  // what matches() compares, but for the spans below
  std::vector<std::size_t> send_counts, send_displacements, recv_counts, recv_displacements;
  MemoryKind resolved_memory = MemoryKind::kHost;
  // Kept by dispatch once the remembered call was fingerprinted: the
  // header of its fingerprint (cross_rank_check/call_fingerprint.h, what a
  // valid call sends), which its arguments alone decide but for the
  // sequence number. Hashing a v-form's counts again cost 90 instructions.
  static constexpr std::size_t kFingerprintHeaderBytes = 40;
  alignas(8) std::array<std::byte, kFingerprintHeaderBytes> fingerprint_header{};
  bool fingerprinted = false;

 private:
  static bool same(const std::vector<std::size_t>& held, std::span<const std::size_t> given) {
    return std::equal(held.begin(), held.end(), given.begin(), given.end());
  }
};

}  // namespace collective::internal
