#include "core/rank_translation.h"

#include <numeric>

#include "core/mpi_thread_level.h"

namespace collective::internal {

std::vector<int> ranks_in(MPI_Comm from, MPI_Comm to) {
  const MpiLock lock;
  int size = 0;
  if (MPI_Comm_size(from, &size) != MPI_SUCCESS || size <= 0) return {};
  std::vector<int> ranks(static_cast<std::size_t>(size));
  std::iota(ranks.begin(), ranks.end(), 0);
  std::vector<int> translated(ranks.size(), MPI_UNDEFINED);
  MPI_Group from_group = MPI_GROUP_NULL;
  MPI_Group to_group = MPI_GROUP_NULL;
  if (MPI_Comm_group(from, &from_group) == MPI_SUCCESS &&
      MPI_Comm_group(to, &to_group) == MPI_SUCCESS) {
    MPI_Group_translate_ranks(from_group, size, ranks.data(), to_group, translated.data());
  }
  if (from_group != MPI_GROUP_NULL) MPI_Group_free(&from_group);
  if (to_group != MPI_GROUP_NULL) MPI_Group_free(&to_group);
  return translated;
}

}  // namespace collective::internal
