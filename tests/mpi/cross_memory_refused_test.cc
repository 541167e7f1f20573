// shared_memory's all_to_all(_v), all_gather_v, gather_v and scatter_v
// when the kernel refuses cross-memory attach
// between the ranks: every rank drops CAP_SYS_PTRACE and the last rank makes
// itself non-dumpable, so the others' process_vm_readv from it fails with
// EPERM (the test checks that it does) while its own reads succeed. Every
// rank must still get every element, through the segment's slots, in that
// call and the later ones.
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <mpi.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace {

using collective::Algorithm;
using collective::Communicator;
using collective::DataType;

std::uint8_t byte_value(int from, int to, std::size_t i) {
  return static_cast<std::uint8_t>(
      (static_cast<std::size_t>(from) * 31 + static_cast<std::size_t>(to) * 7 + i) % 251);
}

void drop_ptrace_capability() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  ASSERT_EQ(syscall(SYS_capget, &header, data), 0) << std::strerror(errno);
  data[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
  ASSERT_EQ(syscall(SYS_capset, &header, data), 0) << std::strerror(errno);
}

// all_gather_v, gather_v to rank 0 (which reads the guarded rank) and
// scatter_v from the guarded rank (which the others read), of `count`
// bytes a block but none from rank 1.
void gathers_and_scatters(Communicator& comm, std::size_t count, int call) {
  const int rank = comm.rank();
  const int size = comm.size();
  const auto p = static_cast<std::size_t>(size);
  std::vector<std::size_t> counts(p, count), displs(p);
  counts[1] = 0;
  for (std::size_t q = 1; q < p; ++q) displs[q] = displs[q - 1] + counts[q - 1];
  const std::size_t total = displs[p - 1] + counts[p - 1];
  const std::size_t own = counts[static_cast<std::size_t>(rank)];
  std::vector<std::uint8_t> block(own), whole(total, 0xEE);
  for (std::size_t i = 0; i < own; ++i) block[i] = byte_value(rank, 0, i);
  auto check_whole = [&](const char* what) {
    for (std::size_t q = 0; q < p; ++q) {
      for (std::size_t i = 0; i < counts[q]; ++i) {
        const std::uint8_t expected = byte_value(static_cast<int>(q), 0, i);
        ASSERT_EQ(int{whole[displs[q] + i]}, int{expected})
            << what << " call " << call << " count " << count << ": rank " << rank << " index "
            << displs[q] + i << " expected " << int{expected} << " actual "
            << int{whole[displs[q] + i]};
      }
    }
  };
  collective::AllGatherOptions all_gather;
  all_gather.algorithm = Algorithm::kSharedMemory;
  comm.all_gather_v(block.data(), own, whole.data(), counts, displs, DataType::kUInt8, all_gather);
  check_whole("all_gather_v");
  collective::GatherOptions gather;
  gather.algorithm = Algorithm::kSharedMemory;
  std::fill(whole.begin(), whole.end(), 0xEE);
  comm.gather_v(block.data(), own, whole.data(), counts, displs, DataType::kUInt8, gather);
  if (rank == 0) check_whole("gather_v");
  collective::ScatterOptions scatter;
  scatter.algorithm = Algorithm::kSharedMemory;
  scatter.root = size - 1;
  for (std::size_t q = 0; q < p; ++q) {
    for (std::size_t i = 0; i < counts[q]; ++i) {
      whole[displs[q] + i] = byte_value(static_cast<int>(q), 0, i);
    }
  }
  std::vector<std::uint8_t> mine(own, 0xEE);
  comm.scatter_v(whole.data(), counts, displs, mine.data(), own, DataType::kUInt8, scatter);
  for (std::size_t i = 0; i < own; ++i) {
    const std::uint8_t expected = byte_value(rank, 0, i);
    ASSERT_EQ(int{mine[i]}, int{expected})
        << "scatter_v call " << call << " count " << count << ": rank " << rank << " index " << i
        << " expected " << int{expected} << " actual " << int{mine[i]};
  }
}

TEST(CrossMemoryRefused, AllToAllGoesThroughTheSlots) {
  Communicator comm = Communicator::world();
  const int rank = comm.rank();
  const int size = comm.size();
  if (size < 2) GTEST_SKIP() << "no peers to read from";
  drop_ptrace_capability();
  const int guarded = size - 1;
  if (rank == guarded) {
    ASSERT_EQ(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), 0) << std::strerror(errno);
  }
  // The condition is real: reading the guarded rank is refused.
  std::uint64_t probe = 42;
  std::int64_t pid = getpid();
  std::uint64_t address = reinterpret_cast<std::uintptr_t>(&probe);
  MPI_Bcast(&pid, 1, MPI_INT64_T, guarded, MPI_COMM_WORLD);
  MPI_Bcast(&address, 1, MPI_UINT64_T, guarded, MPI_COMM_WORLD);
  if (rank != guarded) {
    std::uint64_t read = 0;
    iovec local{&read, sizeof(read)};
    iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), sizeof(read)};
    errno = 0;
    EXPECT_EQ(process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0), -1)
        << "rank " << rank << " could still read the non-dumpable rank";
    EXPECT_EQ(errno, EPERM) << "rank " << rank << ": " << std::strerror(errno);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  const auto p = static_cast<std::size_t>(size);
  collective::AllToAllOptions options;
  options.algorithm = Algorithm::kSharedMemory;
  for (int call = 0; call < 3; ++call) {
    for (std::size_t count : {std::size_t{70001}, std::size_t{200000}}) {
      std::vector<std::uint8_t> send(p * count), recv(p * count, 0xEE);
      // The gathers and scatters first: on the first call it is one of
      // them that meets the refusal.
      gathers_and_scatters(comm, count, call);
      if (HasFatalFailure()) return;
      for (std::size_t q = 0; q < p; ++q) {
        for (std::size_t i = 0; i < count; ++i) {
          send[q * count + i] = byte_value(rank, static_cast<int>(q), i);
        }
      }
      comm.all_to_all(send.data(), recv.data(), count, DataType::kUInt8, options);
      for (std::size_t q = 0; q < p; ++q) {
        for (std::size_t i = 0; i < count; ++i) {
          const std::uint8_t expected = byte_value(static_cast<int>(q), rank, i);
          ASSERT_EQ(int{recv[q * count + i]}, int{expected})
              << "all_to_all call " << call << " count " << count << ": rank " << rank << " index "
              << q * count + i << " expected " << int{expected} << " actual "
              << int{recv[q * count + i]};
        }
      }
      // all_to_all_v of the same blocks.
      std::vector<std::size_t> counts(p, count), displs(p);
      for (std::size_t q = 0; q < p; ++q) displs[q] = q * count;
      std::fill(recv.begin(), recv.end(), 0xEE);
      comm.all_to_all_v(send.data(), counts, displs, recv.data(), counts, displs, DataType::kUInt8,
                        options);
      for (std::size_t q = 0; q < p; ++q) {
        for (std::size_t i = 0; i < count; ++i) {
          const std::uint8_t expected = byte_value(static_cast<int>(q), rank, i);
          ASSERT_EQ(int{recv[q * count + i]}, int{expected})
              << "all_to_all_v call " << call << " count " << count << ": rank " << rank
              << " index " << q * count + i << " expected " << int{expected} << " actual "
              << int{recv[q * count + i]};
        }
      }
    }
  }
}

}  // namespace
