// Long runs must not leak: 100,000 small all-reduces leave the resident
// memory and the open file descriptors where they were after warm-up.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace collective {
namespace {

long resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

int open_files() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++count;
    closedir(dir);
  }
  return count;
}

TEST(LoadTest, HundredThousandSmallAllReducesKeepMemoryAndFilesFlat) {
  auto comm = Communicator::world();
  const int size = comm.size();
  const int rank = comm.rank();
  std::vector<std::int32_t> values(8);
  auto run = [&](int calls, int first) {
    for (int call = first; call < first + calls; ++call) {
      for (std::size_t i = 0; i < values.size(); ++i) {
        values[i] = (call % 1000) + rank * static_cast<int>(i + 1);
      }
      comm.all_reduce(std::span<std::int32_t>(values));
      for (std::size_t i = 0; i < values.size(); ++i) {
        const int expected = size * (call % 1000) + static_cast<int>(i + 1) * size * (size - 1) / 2;
        ASSERT_EQ(values[i], expected) << "rank " << rank << " call " << call << " index " << i;
      }
    }
  };
  // Warm-up: scratch buffers, MPI's internal pools and free lists settle.
  run(5000, 0);
  const long memory_before = resident_kib();
  const int files_before = open_files();
  run(100000, 5000);
  const long memory_after = resident_kib();
  const int files_after = open_files();
  if (rank == 0) {
    std::printf("[ 100000 all_reduce calls: VmRSS %ld -> %ld KiB, open files %d -> %d ]\n",
                memory_before, memory_after, files_before, files_after);
  }
  // One leaked byte per call would be 100 KB; 64 bytes per call, 6 MB.
  EXPECT_LT(memory_after - memory_before, 1024)
      << "rank " << rank << ": VmRSS grew from " << memory_before << " to " << memory_after
      << " KiB";
  EXPECT_EQ(files_after, files_before) << "rank " << rank;
  EXPECT_EQ(comm.sequence_number(), 105000u);
}

}  // namespace
}  // namespace collective
