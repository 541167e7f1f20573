// One collective call as the algorithms see it: validated arguments, the
// resolved timeout and deadline, and the call's sequence number.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "collective/algorithm.h"
#include "collective/options.h"
#include "collective/types.h"
#include "core/data_type_sizes.h"

namespace collective::internal {

struct CallFingerprint;
class CheckRelay;

using Clock = std::chrono::steady_clock;

struct Request {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  // The call's count argument (collective/in_tree/collectives.h names it per
  // kind: count, recv_count or send_count); for all_to_all_v 0 and for
  // reduce_scatter_v recv_counts[rank], which have none.
  std::size_t count = 0;
  // The v-forms' per-rank counts and displacements, in elements; empty for
  // the other kinds and where the call ignores them (off the root, the send
  // side of an in-place all_to_all_v).
  std::span<const std::size_t> send_counts;
  std::span<const std::size_t> send_displacements;
  std::span<const std::size_t> recv_counts;
  std::span<const std::size_t> recv_displacements;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  Algorithm requested = Algorithm::kAuto;  // after the COLLECTIVE_ALGORITHM override
  bool forced = false;                     // the caller (or environment) named the algorithm
  MemoryKind memory = MemoryKind::kHost;   // resolved: kHost or kDevice
  // Reducing collectives: reduce every element over the ranks in rank order
  // (the option or COLLECTIVE_DETERMINISTIC); algorithms that cannot refuse
  // in supports().
  bool deterministic = false;
  std::chrono::milliseconds timeout{0};
  Clock::time_point deadline{};
  std::uint64_t sequence = 0;
  // CommonOptions::call_tag: compared by the cross-rank check.
  std::uint64_t call_tag = 0;
  // Communicator::send or recv ("send", "recv"; null for a collective):
  // `sequence` then counts this rank's calls of that direction with `peer`,
  // and `kind` means nothing.
  const char* point_to_point = nullptr;
  int peer = -1;
  // Set when the algorithm makes the cross-rank check itself, inside its
  // first exchange (CollectiveAlgorithm::carries_check): this rank's
  // fingerprint of the call.
  const CallFingerprint* carried_check = nullptr;
  // Set with carried_check when an outer algorithm runs this one as a step
  // and began the check itself (cross_rank_check/cross_rank_check.h, CheckRelay).
  CheckRelay* check_relay = nullptr;

  std::size_t element_bytes() const { return element_bytes_of(type); }
  // Bytes of one rank's contribution (the `count` above times element size).
  std::size_t bytes() const { return count * element_bytes(); }
  // Whether the call is in its kind's in-place form on rank `rank`
  // (collective/in_tree/collectives.h, InPlaceForm).
  bool in_place(int rank) const;
  // Kinds whose in-place form is send == recv.
  bool in_place() const;
  // "all_reduce #17", used as the operation in every error and log line.
  std::string label() const;
};

}  // namespace collective::internal
