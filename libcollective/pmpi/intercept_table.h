// The MPI functions the drop-in intercepts, and the compile-time check that
// ties them to the one table of collectives (collective/in_tree/collectives.h):
// every collective's MPI counterpart is intercepted here or named in
// kPassedThrough with the reason, so a collective added to the table fails
// the build until the drop-in decides what to do with its MPI call.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "collective/in_tree/collectives.h"

namespace collective::pmpi {

enum class Intercepted : int {
  kAllreduce = 0,
  kReduceScatterBlock,
  kAllgather,
  kBcast,
  kReduce,
  kBarrier,
  kAlltoall,
  kAlltoallv,
  kAllgatherv,
  kReduceScatter,
  kGather,
  kGatherv,
  kScatter,
  kScatterv,
};
inline constexpr int kNumIntercepted = 14;

// By Intercepted value.
inline constexpr std::array<std::string_view, kNumIntercepted> kInterceptedNames = {
    "MPI_Allreduce",  "MPI_Reduce_scatter_block",
    "MPI_Allgather",  "MPI_Bcast",
    "MPI_Reduce",     "MPI_Barrier",
    "MPI_Alltoall",   "MPI_Alltoallv",
    "MPI_Allgatherv", "MPI_Reduce_scatter",
    "MPI_Gather",     "MPI_Gatherv",
    "MPI_Scatter",    "MPI_Scatterv"};

// MPI counterparts of table rows that the drop-in leaves to MPI, every call,
// with the reason (none today; a new collective may start here).
inline constexpr std::array<std::string_view, 0> kPassedThrough = {};

constexpr bool listed(std::string_view name) {
  for (std::string_view intercepted : kInterceptedNames) {
    if (intercepted == name) return true;
  }
  for (std::string_view passed : kPassedThrough) {
    if (passed == name) return true;
  }
  return false;
}

constexpr bool every_collective_decided() {
  for (const CollectiveTraits& row : kCollectiveTable) {
    if (!row.mpi_name.empty() && !listed(row.mpi_name)) return false;
  }
  return true;
}
static_assert(every_collective_decided(),
              "a collective of kCollectiveTable has an MPI counterpart that the drop-in neither "
              "intercepts (kInterceptedNames) nor passes through (kPassedThrough)");

constexpr bool every_interception_in_table() {
  for (std::string_view name : kInterceptedNames) {
    bool found = false;
    for (const CollectiveTraits& row : kCollectiveTable) found = found || row.mpi_name == name;
    if (!found) return false;
  }
  return true;
}
static_assert(every_interception_in_table(),
              "an intercepted MPI function is no collective's counterpart in kCollectiveTable");

}  // namespace collective::pmpi
