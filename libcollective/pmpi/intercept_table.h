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

// Whether an entry point is the blocking MPI call or its nonblocking MPI_I*
// form (served by the matching `_async` call, intercept_started.cc).
enum class Form : int { kBlocking = 0, kStarted = 1 };
inline constexpr int kNumForms = 2;

// The nonblocking forms' names, by Intercepted value.
inline constexpr std::array<std::string_view, kNumIntercepted> kStartedNames = {
    "MPI_Iallreduce",  "MPI_Ireduce_scatter_block",
    "MPI_Iallgather",  "MPI_Ibcast",
    "MPI_Ireduce",     "MPI_Ibarrier",
    "MPI_Ialltoall",   "MPI_Ialltoallv",
    "MPI_Iallgatherv", "MPI_Ireduce_scatter",
    "MPI_Igather",     "MPI_Igatherv",
    "MPI_Iscatter",    "MPI_Iscatterv"};

constexpr bool started_names_follow_blocking() {
  for (std::size_t i = 0; i < kInterceptedNames.size(); ++i) {
    const std::string_view blocking = kInterceptedNames[i], started = kStartedNames[i];
    if (started.size() != blocking.size() + 1 || started.substr(0, 5) != "MPI_I") return false;
    // "MPI_Allreduce" -> "MPI_Iallreduce": the rest, first letter lowered.
    if (started[5] != blocking[4] - 'A' + 'a' || started.substr(6) != blocking.substr(5)) {
      return false;
    }
  }
  return true;
}
static_assert(started_names_follow_blocking(),
              "kStartedNames must name the MPI_I* form of kInterceptedNames, in its order");

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
