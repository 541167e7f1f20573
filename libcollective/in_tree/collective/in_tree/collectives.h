// The one description of every collective (CollectiveKind): whether it
// reduces, whether it has a root, how its count relates to each rank's
// buffers, its in-place form, its nccl-tests name and bus-bandwidth factor,
// its MPI counterpart. Dispatch, the argument checks, the cross-rank check,
// the flight recorder, selection, the C API, the drop-in and the benchmark
// read it here instead of deriving it. A new collective is one row (the
// static_assert below ties the rows to the enum), one case and the
// algorithms that opt in (CollectiveAlgorithm::serves).
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "collective/algorithm.h"

namespace collective {

// How the count argument relates to the elements of one rank's buffers
// (p = the communicator's size).
enum class CollectiveGeometry : unsigned char {
  kNone,        // barrier: no buffers
  kSame,        // send and recv hold count (all_reduce, reduce; broadcast's one buffer)
  kSendBlocks,  // send holds p * count, recv count (reduce_scatter, scatter)
  kRecvBlocks,  // send holds count, recv p * count (all_gather, gather)
  kBothBlocks,  // send and recv hold p * count (all_to_all)
  kVector,      // per-rank counts and displacements (the _v forms)
};

// Where a buffer matters.
enum class BufferUse : unsigned char {
  kNone,  // never read or written (broadcast's send, barrier's)
  kEveryRank,
  kRootOnly,  // ignored, may be null, off the root
};

// Which pointer relation makes a call in place.
enum class InPlaceForm : unsigned char {
  kNone,        // no in-place form (barrier, broadcast: one buffer anyway)
  kSameBuffer,  // send == recv
  kRecvInSend,  // recv == send + this rank's block offset (the root's, for scatter)
  kSendInRecv,  // send == recv + this rank's block offset (the root's, for gather)
};

// nccl-tests' bus bandwidth: busbw = algbw * factor(p).
enum class BusFactor : unsigned char {
  kOne,                // broadcast, reduce, sendrecv
  kTwoPMinusOneOverP,  // all_reduce: 2(p-1)/p
  kPMinusOneOverP,     // reduce_scatter, all_gather, all_to_all, gather, scatter
};

struct CollectiveTraits {
  CollectiveKind kind;
  std::string_view name;  // errors, logs, rules files, the benchmark's -C
  bool reduces;           // takes a ReduceOp (and `deterministic`)
  bool rooted;            // takes a root
  CollectiveGeometry geometry;
  BufferUse send_use;
  BufferUse recv_use;
  InPlaceForm in_place;
  std::string_view in_place_text;    // the in-place form, as errors state it
  std::string_view count_name;       // what the count argument is called in the API
  std::string_view nccl_tests_name;  // "allreduce"; empty where nccl-tests has none
  BusFactor bus_factor;
  std::string_view mpi_name;  // the MPI call the drop-in serves and the baseline times
};

inline constexpr std::array<CollectiveTraits, kNumCollectiveKinds> kCollectiveTable = {{
    {CollectiveKind::kAllReduce, "all_reduce", true, false, CollectiveGeometry::kSame,
     BufferUse::kEveryRank, BufferUse::kEveryRank, InPlaceForm::kSameBuffer, "send == recv",
     "count", "allreduce", BusFactor::kTwoPMinusOneOverP, "MPI_Allreduce"},
    {CollectiveKind::kReduceScatter, "reduce_scatter", true, false, CollectiveGeometry::kSendBlocks,
     BufferUse::kEveryRank, BufferUse::kEveryRank, InPlaceForm::kRecvInSend,
     "recv == send + rank * recv_count", "recv_count", "reducescatter", BusFactor::kPMinusOneOverP,
     "MPI_Reduce_scatter_block"},
    {CollectiveKind::kAllGather, "all_gather", false, false, CollectiveGeometry::kRecvBlocks,
     BufferUse::kEveryRank, BufferUse::kEveryRank, InPlaceForm::kSendInRecv,
     "send == recv + rank * send_count", "send_count", "allgather", BusFactor::kPMinusOneOverP,
     "MPI_Allgather"},
    {CollectiveKind::kBroadcast, "broadcast", false, true, CollectiveGeometry::kSame,
     BufferUse::kNone, BufferUse::kEveryRank, InPlaceForm::kNone, "", "count", "broadcast",
     BusFactor::kOne, "MPI_Bcast"},
    {CollectiveKind::kReduce, "reduce", true, true, CollectiveGeometry::kSame,
     BufferUse::kEveryRank, BufferUse::kRootOnly, InPlaceForm::kSameBuffer, "send == recv", "count",
     "reduce", BusFactor::kOne, "MPI_Reduce"},
    {CollectiveKind::kBarrier, "barrier", false, false, CollectiveGeometry::kNone, BufferUse::kNone,
     BufferUse::kNone, InPlaceForm::kNone, "", "", "", BusFactor::kOne, "MPI_Barrier"},
    {CollectiveKind::kAllToAll, "all_to_all", false, false, CollectiveGeometry::kBothBlocks,
     BufferUse::kEveryRank, BufferUse::kEveryRank, InPlaceForm::kSameBuffer, "send == recv",
     "count", "alltoall", BusFactor::kPMinusOneOverP, "MPI_Alltoall"},
    {CollectiveKind::kAllToAllV, "all_to_all_v", false, false, CollectiveGeometry::kVector,
     BufferUse::kEveryRank, BufferUse::kEveryRank, InPlaceForm::kSameBuffer, "send == recv", "", "",
     BusFactor::kPMinusOneOverP, "MPI_Alltoallv"},
    {CollectiveKind::kAllGatherV, "all_gather_v", false, false, CollectiveGeometry::kVector,
     BufferUse::kEveryRank, BufferUse::kEveryRank, InPlaceForm::kSendInRecv,
     "send == recv + recv_displacements[rank]", "send_count", "", BusFactor::kPMinusOneOverP,
     "MPI_Allgatherv"},
    {CollectiveKind::kReduceScatterV, "reduce_scatter_v", true, false, CollectiveGeometry::kVector,
     BufferUse::kEveryRank, BufferUse::kEveryRank, InPlaceForm::kRecvInSend,
     "recv == send + (recv_counts[0] + ... + recv_counts[rank-1])", "", "",
     BusFactor::kPMinusOneOverP, "MPI_Reduce_scatter"},
    {CollectiveKind::kGather, "gather", false, true, CollectiveGeometry::kRecvBlocks,
     BufferUse::kEveryRank, BufferUse::kRootOnly, InPlaceForm::kSendInRecv,
     "send == recv + root * send_count", "send_count", "gather", BusFactor::kPMinusOneOverP,
     "MPI_Gather"},
    {CollectiveKind::kGatherV, "gather_v", false, true, CollectiveGeometry::kVector,
     BufferUse::kEveryRank, BufferUse::kRootOnly, InPlaceForm::kSendInRecv,
     "send == recv + recv_displacements[root]", "send_count", "", BusFactor::kPMinusOneOverP,
     "MPI_Gatherv"},
    {CollectiveKind::kScatter, "scatter", false, true, CollectiveGeometry::kSendBlocks,
     BufferUse::kRootOnly, BufferUse::kEveryRank, InPlaceForm::kRecvInSend,
     "recv == send + root * recv_count", "recv_count", "scatter", BusFactor::kPMinusOneOverP,
     "MPI_Scatter"},
    {CollectiveKind::kScatterV, "scatter_v", false, true, CollectiveGeometry::kVector,
     BufferUse::kRootOnly, BufferUse::kEveryRank, InPlaceForm::kRecvInSend,
     "recv == send + send_displacements[root]", "recv_count", "", BusFactor::kPMinusOneOverP,
     "MPI_Scatterv"},
}};

constexpr bool collective_table_follows_enum() {
  for (std::size_t i = 0; i < kCollectiveTable.size(); ++i) {
    if (static_cast<std::size_t>(kCollectiveTable[i].kind) != i) return false;
  }
  return true;
}
static_assert(collective_table_follows_enum(),
              "kCollectiveTable has one row per CollectiveKind, in the enum's order");

// The row of `kind`, which must be a CollectiveKind value (check with
// is_collective_kind first where it comes from a caller).
constexpr const CollectiveTraits& traits_of(CollectiveKind kind) {
  return kCollectiveTable[static_cast<std::size_t>(kind)];
}

constexpr bool is_collective_kind(int value) { return value >= 0 && value < kNumCollectiveKinds; }

constexpr double bus_bandwidth_factor(BusFactor factor, int ranks) {
  if (ranks <= 0) return 0.0;
  const double p = ranks;
  switch (factor) {
    case BusFactor::kOne: return 1.0;
    case BusFactor::kTwoPMinusOneOverP: return 2.0 * (p - 1) / p;
    case BusFactor::kPMinusOneOverP: return (p - 1) / p;
  }
  return 1.0;
}

}  // namespace collective
