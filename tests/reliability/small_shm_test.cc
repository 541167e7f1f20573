// A /dev/shm smaller than the node segment once killed every rank with
// SIGBUS at the first touch of a page (issue 13). small_shm_test.sh runs
// this under mpirun in a private mount namespace whose /dev/shm is a small
// tmpfs, with SMALL_SHM_EXPECT saying what the segment must do there:
//   fitted       it fits with smaller slots (or keeps the small slots its
//                first calls sized it to): shared_memory still serves
//   unavailable  it does not fit at all: AUTO serves every call with
//                another algorithm, a forced shared_memory raises
//                UnsupportedError naming /dev/shm
// Either way, allocate() beyond /dev/shm raises instead of handing out
// memory that kills the process when touched.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace collective {
namespace {

std::string expectation() {
  const char* value = std::getenv("SMALL_SHM_EXPECT");
  return value != nullptr ? value : "";
}

void all_reduce_exact(Communicator& comm, std::size_t count, Algorithm algorithm) {
  std::vector<std::int32_t> values(count);
  for (std::size_t i = 0; i < count; ++i)
    values[i] = static_cast<std::int32_t>(comm.rank() + i % 31);
  AllReduceOptions options;
  options.algorithm = algorithm;
  comm.all_reduce(values.data(), values.data(), count, DataType::kInt32, options);
  const int size = comm.size();
  for (std::size_t i = 0; i < count; ++i) {
    const auto expected = static_cast<std::int32_t>(size * (size - 1) / 2 + size * (i % 31));
    ASSERT_EQ(values[i], expected)
        << "rank " << comm.rank() << " count " << count << " index " << i;
  }
}

TEST(SmallDevShm, EveryCallServedExactly) {
  const std::string expect = expectation();
  ASSERT_TRUE(expect == "fitted" || expect == "unavailable") << "SMALL_SHM_EXPECT=" << expect;
  Communicator comm = Communicator::world();
  for (std::size_t count = 1; count <= (std::size_t{1} << 21); count *= 8) {
    all_reduce_exact(comm, count, Algorithm::kAuto);
  }
  if (comm.size() == 1) return;  // one rank never needs the segment
  if (expect == "fitted") {
    all_reduce_exact(comm, std::size_t{1} << 20, Algorithm::kSharedMemory);
  } else {
    EXPECT_NE(comm.last_algorithm(), Algorithm::kSharedMemory) << "rank " << comm.rank();
    try {
      all_reduce_exact(comm, 1000, Algorithm::kSharedMemory);
      ADD_FAILURE() << "rank " << comm.rank() << ": a forced shared_memory all_reduce returned";
    } catch (const UnsupportedError& error) {
      EXPECT_NE(std::string(error.what()).find("/dev/shm"), std::string::npos)
          << "rank " << comm.rank() << ": " << error.what();
    }
    // The communicator is not poisoned.
    all_reduce_exact(comm, 1000, Algorithm::kAuto);
  }
}

TEST(SmallDevShm, AllocateBeyondDevShmRaises) {
  Communicator comm = Communicator::world();
  try {
    // More than any of the tmpfs sizes the tests mount (at most 64 MiB):
    // never fits, whichever rank asks first.
    void* memory = comm.allocate(std::size_t{256} << 20);
    comm.deallocate(memory);
    ADD_FAILURE() << "rank " << comm.rank() << ": allocate(256 MiB) succeeded on a small /dev/shm";
  } catch (const CommunicationError& error) {
    EXPECT_NE(std::string(error.what()).find("cannot reserve"), std::string::npos)
        << "rank " << comm.rank() << ": " << error.what();
  }
  // What fits is still handed out, and usable.
  auto* small = static_cast<char*>(comm.allocate(4096));
  small[4095] = 1;
  comm.deallocate(small);
}

}  // namespace
}  // namespace collective
