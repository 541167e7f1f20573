// shared_memory's all_gather, all_gather_v, gather, gather_v, scatter,
// scatter_v, broadcast, reduce_scatter and reduce
// (docs/algorithms.md, "shared_memory: all_to_all, gathers and scatters"),
// forced, on every rank count: uneven blocks with a 0 on rank 1, blocks
// below and above the cross-memory-attach threshold, in place and not, the
// root first and last, send buffers from Communicator::allocate (read in
// place by the peers) and ordinary ones. Every element is checked on every
// rank, and the call must have run shared_memory.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace {

using collective::Algorithm;
using collective::Communicator;
using collective::DataType;

enum class Kind { kAllGather, kAllGatherV, kGather, kGatherV, kScatter, kScatterV, kBroadcast };

const char* name_of(Kind kind) {
  switch (kind) {
    case Kind::kAllGather: return "all_gather";
    case Kind::kAllGatherV: return "all_gather_v";
    case Kind::kGather: return "gather";
    case Kind::kGatherV: return "gather_v";
    case Kind::kScatter: return "scatter";
    case Kind::kScatterV: return "scatter_v";
    case Kind::kBroadcast: return "broadcast";
  }
  return "?";
}

// Element i of the block rank `from` contributes (gathers) or that the root
// sends to rank `to` (scatters): distinct per block and index.
std::uint64_t value(int block, std::size_t i) {
  return (static_cast<std::uint64_t>(block) << 40) ^ (i * 2654435761u + 17);
}

// Element i of rank q's input to the reductions: distinct per rank and
// index, and its sums over 4 ranks exact in int64.
std::int64_t summand(int q, std::size_t i) {
  return static_cast<std::int64_t>((i * 2654435761u) % 1000003) * (q + 1) + q;
}

// Whether this or any other rank has failed so far: every rank stops at
// the first case that failed on any.
bool any_rank_failed() {
  int failed = ::testing::Test::HasFailure() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return failed != 0;
}

// The block of rank q: `base` elements times (q + 1), none on rank 1, all
// equal for the non-v kinds.
std::size_t block_count(Kind kind, std::size_t base, int q) {
  if (kind == Kind::kAllGather || kind == Kind::kGather || kind == Kind::kScatter ||
      kind == Kind::kBroadcast) {
    return base;
  }
  return q == 1 ? 0 : base * static_cast<std::size_t>(q + 1);
}

// A buffer of 8-byte elements, from Communicator::allocate when `shared`.
class Buffer {
 public:
  Buffer(Communicator& comm, std::size_t count, bool shared) : comm_(comm), count_(count) {
    if (shared) {
      data_ = static_cast<std::uint64_t*>(comm.allocate(count * sizeof(std::uint64_t)));
      shared_ = true;
    } else {
      owned_.resize(count);
      data_ = owned_.data();
    }
    for (std::size_t i = 0; i < count; ++i) data_[i] = 0xEEEEEEEEEEEEEEEEull;
  }
  ~Buffer() {
    if (shared_) comm_.deallocate(data_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::uint64_t* data() { return count_ == 0 ? nullptr : data_; }
  std::uint64_t& operator[](std::size_t i) { return data_[i]; }

 private:
  Communicator& comm_;
  std::size_t count_;
  std::vector<std::uint64_t> owned_;
  std::uint64_t* data_ = nullptr;
  bool shared_ = false;
};

void run_case(Communicator& comm, Kind kind, std::size_t base, int root, bool in_place,
              bool shared) {
  const int rank = comm.rank();
  const int size = comm.size();
  const auto p = static_cast<std::size_t>(size);
  std::vector<std::size_t> counts(p), displs(p);
  std::size_t total = 0;
  for (int q = 0; q < size; ++q) {
    counts[static_cast<std::size_t>(q)] = block_count(kind, base, q);
    // A gap of 3 elements between blocks: untouched by the call.
    displs[static_cast<std::size_t>(q)] = total;
    total += counts[static_cast<std::size_t>(q)] + 3;
  }
  const std::size_t own = counts[static_cast<std::size_t>(rank)];
  const bool rooted = kind != Kind::kAllGather && kind != Kind::kAllGatherV;
  const bool is_root = !rooted || rank == root;
  const bool gathers = !rooted || kind == Kind::kGather || kind == Kind::kGatherV;
  // The non-v kinds' blocks lie back to back.
  if (kind == Kind::kAllGather || kind == Kind::kGather || kind == Kind::kScatter) {
    for (std::size_t q = 0; q < p; ++q) displs[q] = q * base;
    total = p * base;
  }
  const DataType type = DataType::kInt64;  // moved, never computed on: any 8 bytes
  const std::string label = std::string(name_of(kind)) + " base " + std::to_string(base) +
                            " root " + std::to_string(root) + (in_place ? " in place" : "") +
                            (shared ? " allocate" : "") + ": rank " + std::to_string(rank);

  if (kind == Kind::kBroadcast) {
    // The root's buffer (from Communicator::allocate when `shared`: read
    // in place by the peers) reaches every rank; the root's is unchanged.
    Buffer buffer(comm, base, shared && rank == root);
    if (rank == root) {
      for (std::size_t i = 0; i < base; ++i) buffer[i] = value(root, i);
    }
    collective::BroadcastOptions options;
    options.algorithm = Algorithm::kSharedMemory;
    options.root = root;
    comm.broadcast(buffer.data(), base, type, options);
    if (size > 1) {
      ASSERT_EQ(comm.last_algorithm(), Algorithm::kSharedMemory) << label;
    }
    for (std::size_t i = 0; i < base; ++i) {
      ASSERT_EQ(buffer[i], value(root, i))
          << label << " index " << i << " expected " << value(root, i) << " actual " << buffer[i];
    }
    return;
  }
  if (gathers) {
    Buffer whole(comm, is_root ? total : 0, false);
    Buffer mine(comm, own, shared);
    std::uint64_t* send = mine.data();
    const std::size_t at = displs[static_cast<std::size_t>(rank)];
    for (std::size_t i = 0; i < own; ++i) {
      const std::uint64_t v = value(rank, i);
      if (in_place && is_root) {
        whole[at + i] = v;
      } else {
        mine[i] = v;
      }
    }
    if (in_place && is_root) send = whole.data() + at;
    if (!rooted) {
      collective::AllGatherOptions options;
      options.algorithm = Algorithm::kSharedMemory;
      if (kind == Kind::kAllGather) {
        comm.all_gather(send, whole.data(), base, type, options);
      } else {
        comm.all_gather_v(send, own, whole.data(), counts, displs, type, options);
      }
    } else {
      collective::GatherOptions options;
      options.algorithm = Algorithm::kSharedMemory;
      options.root = root;
      if (kind == Kind::kGather) {
        comm.gather(send, whole.data(), base, type, options);
      } else {
        comm.gather_v(send, own, whole.data(), counts, displs, type, options);
      }
    }
    if (size > 1) {
      ASSERT_EQ(comm.last_algorithm(), Algorithm::kSharedMemory) << label;
    }
    if (!is_root) return;
    std::vector<bool> covered(total, false);
    for (std::size_t q = 0; q < p; ++q) {
      for (std::size_t i = 0; i < counts[q]; ++i) {
        const std::uint64_t expected = value(static_cast<int>(q), i);
        covered[displs[q] + i] = true;
        ASSERT_EQ(whole[displs[q] + i], expected)
            << label << " index " << displs[q] + i << " (block " << q << ", element " << i
            << ") expected " << expected << " actual " << whole[displs[q] + i];
      }
    }
    for (std::size_t i = 0; i < total; ++i) {
      if (covered[i]) continue;
      ASSERT_EQ(whole[i], 0xEEEEEEEEEEEEEEEEull) << label << " index " << i << " (a gap) written";
    }
    return;
  }
  // Scatters.
  Buffer whole(comm, is_root ? total : 0, shared);
  Buffer mine(comm, own, false);
  if (is_root) {
    for (std::size_t q = 0; q < p; ++q) {
      for (std::size_t i = 0; i < counts[q]; ++i)
        whole[displs[q] + i] = value(static_cast<int>(q), i);
    }
  }
  std::uint64_t* recv =
      in_place && is_root ? whole.data() + displs[static_cast<std::size_t>(rank)] : mine.data();
  collective::ScatterOptions options;
  options.algorithm = Algorithm::kSharedMemory;
  options.root = root;
  if (kind == Kind::kScatter) {
    comm.scatter(whole.data(), recv, base, type, options);
  } else {
    comm.scatter_v(whole.data(), counts, displs, recv, own, type, options);
  }
  if (size > 1) {
    ASSERT_EQ(comm.last_algorithm(), Algorithm::kSharedMemory) << label;
  }
  for (std::size_t i = 0; i < own; ++i) {
    const std::uint64_t expected = value(rank, i);
    const std::uint64_t actual = recv[i];
    ASSERT_EQ(actual, expected) << label << " index " << i << " expected " << expected << " actual "
                                << actual;
  }
  if (is_root) {
    // The root's send buffer is the caller's: unchanged.
    for (std::size_t q = 0; q < p; ++q) {
      for (std::size_t i = 0; i < counts[q]; ++i) {
        ASSERT_EQ(whole[displs[q] + i], value(static_cast<int>(q), i))
            << label << " send index " << displs[q] + i << " changed";
      }
    }
  }
}

TEST(SharedMemoryGatherScatter, EveryFormExact) {
  Communicator comm = Communicator::world();
  // Bases: empty, a few elements (every block in the first hand-off's box),
  // 125 (1000 bytes times q + 1: at 4 ranks rank 3's 4000 bytes miss the
  // box by 8 while the others' fit, one call mixes both), 600 (4800 bytes
  // and more: the slots),
  // 9000 elements = 72 KB (from 144 KB on rank 1's right, cross-memory
  // attach), one piece past the default 1 MiB slot.
  for (const Kind kind : {Kind::kAllGather, Kind::kAllGatherV, Kind::kGather, Kind::kGatherV,
                          Kind::kScatter, Kind::kScatterV, Kind::kBroadcast}) {
    for (const std::size_t base : {std::size_t{0}, std::size_t{5}, std::size_t{125},
                                   std::size_t{600}, std::size_t{9000}, std::size_t{140000}}) {
      for (const int root : {0, comm.size() - 1}) {
        if ((kind == Kind::kAllGather || kind == Kind::kAllGatherV) && root != 0) continue;
        for (const bool in_place : {false, true}) {
          if (in_place && kind == Kind::kBroadcast) continue;  // one buffer anyway
          for (const bool shared : {false, true}) {
            run_case(comm, kind, base, root, in_place, shared);
            if (any_rank_failed()) FAIL() << "a rank failed " << name_of(kind) << " base " << base;
          }
        }
      }
    }
  }
}

// reduce_scatter forced: blocks of 0, 1, 7, 1000 (the slots) and 140000
// elements (more than one 1 MiB slot), in place and not, inputs from
// Communicator::allocate (read in place by the peers) and ordinary ones;
// int64 sums (exact), every element of the block checked, and the input
// unchanged out of place.
TEST(SharedMemoryGatherScatter, ReduceScatterEveryForm) {
  Communicator comm = Communicator::world();
  const int rank = comm.rank();
  const auto p = static_cast<std::size_t>(comm.size());
  for (const std::size_t block :
       {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{140000}}) {
    for (const bool in_place : {false, true}) {
      for (const bool shared : {false, true}) {
        const std::string label = "reduce_scatter block " + std::to_string(block) +
                                  (in_place ? " in place" : "") + (shared ? " allocate" : "") +
                                  ": rank " + std::to_string(rank);
        Buffer send(comm, block * p, shared);
        Buffer recv(comm, block, false);
        for (std::size_t i = 0; i < block * p; ++i) {
          send[i] = static_cast<std::uint64_t>(summand(rank, i));
        }
        std::uint64_t* out =
            in_place ? send.data() + static_cast<std::size_t>(rank) * block : recv.data();
        if (block == 0) out = nullptr;
        collective::ReduceScatterOptions options;
        options.algorithm = Algorithm::kSharedMemory;
        comm.reduce_scatter(send.data(), out, block, DataType::kInt64, options);
        // Checked in a lambda: a failed ASSERT leaves it, not the test, so
        // every rank still reaches any_rank_failed's all-reduce.
        [&] {
          if (p > 1) {
            ASSERT_EQ(comm.last_algorithm(), Algorithm::kSharedMemory) << label;
          }
          for (std::size_t i = 0; i < block; ++i) {
            const std::size_t at = static_cast<std::size_t>(rank) * block + i;
            std::int64_t expected = 0;
            for (int q = 0; q < static_cast<int>(p); ++q) expected += summand(q, at);
            const auto actual = static_cast<std::int64_t>(out[i]);
            ASSERT_EQ(actual, expected)
                << label << " index " << i << " expected " << expected << " actual " << actual;
          }
          for (std::size_t i = 0; !in_place && i < block * p; ++i) {
            ASSERT_EQ(send[i], static_cast<std::uint64_t>(summand(rank, i)))
                << label << " input index " << i << " changed";
          }
        }();
        if (any_rank_failed()) FAIL() << "a rank failed " << label;
      }
    }
  }
}

// reduce forced: 0, 1, 7, 1000 (past the box: the rounds) and 140000
// elements (more than one 1 MiB slot), the root first and last, in place
// on the root and not, inputs from Communicator::allocate and ordinary
// ones, no receive buffer off the root; int64 sums (exact), every element
// checked on the root, every input unchanged out of place.
TEST(SharedMemoryGatherScatter, ReduceEveryForm) {
  Communicator comm = Communicator::world();
  const int rank = comm.rank();
  const int size = comm.size();
  for (const std::size_t count :
       {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{140000}}) {
    for (const int root : {0, size - 1}) {
      for (const bool in_place : {false, true}) {
        for (const bool shared : {false, true}) {
          const bool is_root = rank == root;
          const std::string label = "reduce count " + std::to_string(count) + " root " +
                                    std::to_string(root) + (in_place ? " in place" : "") +
                                    (shared ? " allocate" : "") + ": rank " + std::to_string(rank);
          Buffer send(comm, count, shared);
          Buffer recv(comm, is_root ? count : 0, false);
          for (std::size_t i = 0; i < count; ++i) {
            send[i] = static_cast<std::uint64_t>(summand(rank, i));
          }
          std::uint64_t* out = !is_root ? nullptr : in_place ? send.data() : recv.data();
          collective::ReduceOptions options;
          options.algorithm = Algorithm::kSharedMemory;
          options.root = root;
          comm.reduce(send.data(), out, count, DataType::kInt64, options);
          [&] {  // as in ReduceScatterEveryForm
            if (size > 1) {
              ASSERT_EQ(comm.last_algorithm(), Algorithm::kSharedMemory) << label;
            }
            for (std::size_t i = 0; is_root && i < count; ++i) {
              std::int64_t expected = 0;
              for (int q = 0; q < size; ++q) expected += summand(q, i);
              const auto actual = static_cast<std::int64_t>(out[i]);
              ASSERT_EQ(actual, expected)
                  << label << " index " << i << " expected " << expected << " actual " << actual;
            }
            for (std::size_t i = 0; !(in_place && is_root) && i < count; ++i) {
              ASSERT_EQ(send[i], static_cast<std::uint64_t>(summand(rank, i)))
                  << label << " input index " << i << " changed";
            }
          }();
          if (any_rank_failed()) FAIL() << "a rank failed " << label;
        }
      }
    }
  }
}

// AUTO on one node: all_gather(_v), gather and scatter whose every block fits
// the box of the first hand-off go by shared_memory (one hand-off, the
// cross-rank check in it); gather_v and scatter_v, whose counts only the
// root knows, keep the size rule's mpi (the choice must be the same on
// every rank without a round of its own). Exact results with it.
TEST(SharedMemoryGatherScatter, AutoTakesTheBoxForSmallBlocks) {
  Communicator comm = Communicator::world();
  const int rank = comm.rank();
  const int size = comm.size();
  if (size < 2) GTEST_SKIP() << "one rank runs no algorithm";
  const auto p = static_cast<std::size_t>(size);
  std::vector<std::size_t> counts(p), displs(p);
  for (std::size_t q = 0; q < p; ++q) {
    counts[q] = q == 1 ? 0 : q + 2;  // uneven, a 0 on rank 1
    displs[q] = q == 0 ? 0 : displs[q - 1] + counts[q - 1];
  }
  const std::size_t total = displs[p - 1] + counts[p - 1];
  const auto own = counts[static_cast<std::size_t>(rank)];
  std::vector<std::uint64_t> mine(own), whole(total, 0xEEEEEEEEEEEEEEEEull);
  for (std::size_t i = 0; i < own; ++i) mine[i] = value(rank, i);
  // An even all_gather of 3 elements a rank, and one of 1000 (8000 bytes:
  // the slots, which AUTO takes for even blocks up to the cross-memory
  // attach threshold).
  for (const std::size_t each : {std::size_t{3}, std::size_t{1000}}) {
    std::vector<std::uint64_t> block(each), all(each * p, 0);
    for (std::size_t i = 0; i < each; ++i) block[i] = value(rank, i);
    comm.all_gather(block.data(), all.data(), each, DataType::kInt64);
    EXPECT_EQ(comm.last_algorithm(), Algorithm::kSharedMemory)
        << "rank " << rank << ": AUTO all_gather of " << each << " elements a rank";
    for (std::size_t i = 0; i < all.size(); ++i) {
      const std::uint64_t expected = value(static_cast<int>(i / each), i % each);
      EXPECT_EQ(all[i], expected) << "all_gather rank " << rank << " index " << i << " expected "
                                  << expected << " actual " << all[i];
      if (HasFailure()) break;
    }
  }
  comm.all_gather_v(mine.data(), own, whole.data(), counts, displs, DataType::kInt64);
  EXPECT_EQ(comm.last_algorithm(), Algorithm::kSharedMemory)
      << "rank " << rank << ": AUTO all_gather_v of " << total << " elements";
  for (std::size_t q = 0; q < p; ++q) {
    for (std::size_t i = 0; i < counts[q]; ++i) {
      EXPECT_EQ(whole[displs[q] + i], value(static_cast<int>(q), i))
          << "all_gather_v rank " << rank << " index " << displs[q] + i << " expected "
          << value(static_cast<int>(q), i) << " actual " << whole[displs[q] + i];
      if (HasFailure()) break;
    }
  }
  const int root = size - 1;
  std::vector<std::uint64_t> block{value(rank, 0), value(rank, 1)}, gathered(2 * p, 0);
  collective::GatherOptions gather;
  gather.root = root;
  comm.gather(block.data(), gathered.data(), 2, DataType::kInt64, gather);
  EXPECT_EQ(comm.last_algorithm(), Algorithm::kSharedMemory) << "rank " << rank << ": AUTO gather";
  if (rank == root) {
    for (std::size_t i = 0; i < 2 * p; ++i) {
      const std::uint64_t expected = value(static_cast<int>(i / 2), i % 2);
      EXPECT_EQ(gathered[i], expected) << "gather root " << rank << " index " << i << " expected "
                                       << expected << " actual " << gathered[i];
      if (HasFailure()) break;
    }
  }
  collective::ScatterOptions scatter;
  scatter.root = root;
  std::vector<std::uint64_t> part(2, 0);
  comm.scatter(gathered.data(), part.data(), 2, DataType::kInt64, scatter);
  EXPECT_EQ(comm.last_algorithm(), Algorithm::kSharedMemory) << "rank " << rank << ": AUTO scatter";
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(part[i], value(rank, i)) << "scatter rank " << rank << " index " << i << " expected "
                                       << value(rank, i) << " actual " << part[i];
    if (HasFailure()) break;
  }
  for (const std::size_t each : {std::size_t{3}, std::size_t{1000}}) {
    std::vector<std::uint64_t> buffer(each, 0);
    for (std::size_t i = 0; rank == root && i < each; ++i) buffer[i] = value(root, i);
    collective::BroadcastOptions broadcast;
    broadcast.root = root;
    comm.broadcast(buffer.data(), each, DataType::kInt64, broadcast);
    EXPECT_EQ(comm.last_algorithm(), Algorithm::kSharedMemory)
        << "rank " << rank << ": AUTO broadcast of " << each << " elements";
    for (std::size_t i = 0; i < each; ++i) {
      EXPECT_EQ(buffer[i], value(root, i))
          << "broadcast rank " << rank << " index " << i << " expected " << value(root, i)
          << " actual " << buffer[i];
      if (HasFailure()) break;
    }
  }
  comm.gather_v(mine.data(), own, whole.data(), counts, displs, DataType::kInt64, gather);
  EXPECT_EQ(comm.last_algorithm(), Algorithm::kMpi) << "rank " << rank << ": AUTO gather_v";
}

// The cross-rank check rides in the first hand-off's box: a count that
// differs on rank 0 is a MismatchError on every rank, the receive buffer
// untouched, and the next call is exact.
TEST(SharedMemoryGatherScatter, CarriedCheckCatchesCountMismatch) {
  Communicator comm = Communicator::world();
  const int rank = comm.rank();
  const int size = comm.size();
  if (size < 2) GTEST_SKIP() << "one rank checks nothing";
  const auto p = static_cast<std::size_t>(size);
  collective::GatherOptions options;
  options.algorithm = Algorithm::kSharedMemory;
  options.root = size - 1;
  std::vector<std::uint64_t> send{value(rank, 0), value(rank, 1)}, recv(2 * p, 0);
  // A first call that agrees makes the node's segment (the check then goes
  // through it, carried).
  comm.gather(send.data(), recv.data(), 1, DataType::kInt64, options);
  std::fill(recv.begin(), recv.end(), 0xEEEEEEEEEEEEEEEEull);
  bool raised = false;
  try {
    comm.gather(send.data(), recv.data(), rank == 0 ? 2 : 1, DataType::kInt64, options);
  } catch (const collective::MismatchError&) {
    raised = true;
  }
  EXPECT_TRUE(raised) << "rank " << rank << ": no MismatchError for counts 2 against 1";
  for (std::size_t i = 0; i < recv.size(); ++i) {
    EXPECT_EQ(recv[i], 0xEEEEEEEEEEEEEEEEull) << "rank " << rank << " index " << i << " touched";
    if (HasFailure()) break;
  }
  // all_gather's one hand-off (its blocks in the boxes with the check)
  // likewise: 2 elements on rank 0 against 1.
  collective::AllGatherOptions all;
  all.algorithm = Algorithm::kSharedMemory;
  std::vector<std::uint64_t> everyone(2 * p, 0xEEEEEEEEEEEEEEEEull);
  raised = false;
  try {
    comm.all_gather(send.data(), everyone.data(), rank == 0 ? 2 : 1, DataType::kInt64, all);
  } catch (const collective::MismatchError&) {
    raised = true;
  }
  EXPECT_TRUE(raised) << "rank " << rank << ": no all_gather MismatchError for counts 2 against 1";
  for (std::size_t i = 0; i < everyone.size(); ++i) {
    EXPECT_EQ(everyone[i], 0xEEEEEEEEEEEEEEEEull)
        << "all_gather rank " << rank << " index " << i << " touched";
    if (HasFailure()) break;
  }
  // And broadcast's (the root's buffer in its box): the root, the last
  // rank, broadcasts 1 element where rank 0 expects 2.
  collective::BroadcastOptions broadcast;
  broadcast.algorithm = Algorithm::kSharedMemory;
  broadcast.root = size - 1;
  std::vector<std::uint64_t> buffer(2, rank == size - 1 ? value(rank, 0) : 0xEEEEEEEEEEEEEEEEull);
  raised = false;
  try {
    comm.broadcast(buffer.data(), rank == 0 ? 2 : 1, DataType::kInt64, broadcast);
  } catch (const collective::MismatchError&) {
    raised = true;
  }
  EXPECT_TRUE(raised) << "rank " << rank << ": no broadcast MismatchError for counts 2 against 1";
  if (rank != size - 1) {
    for (std::size_t i = 0; i < buffer.size(); ++i) {
      EXPECT_EQ(buffer[i], 0xEEEEEEEEEEEEEEEEull)
          << "broadcast rank " << rank << " index " << i << " touched";
      if (HasFailure()) break;
    }
  }
  comm.gather(send.data(), recv.data(), 2, DataType::kInt64, options);
  if (rank != size - 1) return;
  for (std::size_t i = 0; i < 2 * p; ++i) {
    const std::uint64_t expected = value(static_cast<int>(i / 2), i % 2);
    EXPECT_EQ(recv[i], expected) << "rank " << rank << " index " << i << " expected " << expected
                                 << " actual " << recv[i];
    if (HasFailure()) break;
  }
}

// all_gather_v through shared_memory with uneven blocks at every
// alignment: bytes (uint8), gaps of 3 bytes between the blocks (each gap
// checked untouched), the send buffer 1 byte into its allocation, so the
// single copy reads most blocks through its bounce buffer
// (docs/algorithms.md). Layouts where rank 0 has 4 times the others'
// block, where each rank's differs, and where rank 0's fits the box (sent
// there) while the others' take the single copy; out of place (the single
// copy) and in place (the slots). Every byte checked on every rank.
TEST(SharedMemoryGatherScatter, UnevenAllGatherVEveryAlignment) {
  Communicator comm = Communicator::world();
  const int rank = comm.rank();
  const int size = comm.size();
  const auto p = static_cast<std::size_t>(size);
  constexpr std::uint8_t kUntouched = 0xEE;
  auto byte_of = [](int from, std::size_t i) {
    return static_cast<std::uint8_t>((i * 131 + static_cast<std::size_t>(from) * 29 + i / 251) %
                                     251);
  };
  const std::vector<std::vector<std::size_t>> layouts = {
      // rank 0 4x the others (the bench's --uneven 4)
      [&] {
        std::vector<std::size_t> c(p, 300001);
        c[0] = 4 * 300001;
        return c;
      }(),
      // every rank its own size
      [&] {
        std::vector<std::size_t> c(p);
        for (std::size_t q = 0; q < p; ++q) c[q] = 70001 + 180007 * q;
        return c;
      }(),
      // rank 0's block in its box, the others' large
      [&] {
        std::vector<std::size_t> c(p, 500003);
        c[0] = 97;
        return c;
      }()};
  for (std::size_t layout = 0; layout < layouts.size(); ++layout) {
    const std::vector<std::size_t>& counts = layouts[layout];
    std::vector<std::size_t> displs(p);
    for (std::size_t q = 1; q < p; ++q) displs[q] = displs[q - 1] + counts[q - 1] + 3;
    const std::size_t total = displs[p - 1] + counts[p - 1] + 3;
    const auto own = static_cast<std::size_t>(rank);
    for (const bool in_place : {false, true}) {
      std::vector<std::uint8_t> recv(total, kUntouched);
      std::vector<std::uint8_t> send(in_place ? 0 : counts[own] + 1);
      // Out of place the send buffer starts 1 byte into its allocation.
      std::uint8_t* mine = in_place ? recv.data() + displs[own] : send.data() + 1;
      for (std::size_t i = 0; i < counts[own]; ++i) mine[i] = byte_of(rank, i);
      collective::AllGatherOptions options;
      options.algorithm = Algorithm::kSharedMemory;
      comm.all_gather_v(mine, counts[own], recv.data(), counts, displs, DataType::kUInt8, options);
      EXPECT_EQ(comm.last_algorithm(), Algorithm::kSharedMemory);
      // The first wrong byte only, and no early return: every rank reaches
      // any_rank_failed's all-reduce.
      [&] {
        for (std::size_t q = 0; q < p; ++q) {
          for (std::size_t i = 0; i < counts[q]; ++i) {
            const std::uint8_t expected = byte_of(static_cast<int>(q), i);
            if (recv[displs[q] + i] != expected) {
              ADD_FAILURE() << "rank " << rank << " layout " << layout
                            << (in_place ? " in place" : "") << ": block " << q << " byte " << i
                            << " expected " << int{expected} << " actual "
                            << int{recv[displs[q] + i]};
              return;
            }
          }
          for (std::size_t g = 0; g < 3; ++g) {
            if (recv[displs[q] + counts[q] + g] != kUntouched) {
              ADD_FAILURE() << "rank " << rank << " layout " << layout
                            << (in_place ? " in place" : "") << ": gap byte " << g
                            << " after block " << q << " written";
              return;
            }
          }
        }
      }();
      if (any_rank_failed()) return;
    }
  }
}

// The repeat-call fast path remembers the v-forms' verdicts by all their
// counts and displacements: a call whose own count and buffers repeat the
// last one but whose other blocks changed is checked and decided afresh —
// receive blocks made to overlap are refused on every rank. 1-element
// blocks (the box), a 4800-byte block (past the box's 4112: the slots or
// the ring, by the estimates and the slot size) and 1-element blocks
// again; AUTO serves the box's by shared_memory. Exact results throughout.
TEST(SharedMemoryGatherScatter, RepeatCallPathComparesEveryCount) {
  Communicator comm = Communicator::world();
  const int rank = comm.rank();
  const int size = comm.size();
  if (size < 2) GTEST_SKIP() << "one rank runs no algorithm";
  const auto p = static_cast<std::size_t>(size);
  std::vector<std::uint64_t> whole(p + 600, 0);
  for (const std::size_t last : {std::size_t{1}, std::size_t{600}, std::size_t{1}}) {
    std::vector<std::size_t> counts(p, 1), displs(p);
    counts[p - 1] = last;
    for (std::size_t q = 1; q < p; ++q) displs[q] = displs[q - 1] + counts[q - 1];
    const auto own = counts[static_cast<std::size_t>(rank)];
    std::vector<std::uint64_t> mine(own);
    for (std::size_t i = 0; i < own; ++i) mine[i] = value(rank, i);
    std::fill(whole.begin(), whole.end(), 0);
    comm.all_gather_v(mine.data(), own, whole.data(), counts, displs, DataType::kInt64);
    if (last == 1) {
      EXPECT_EQ(comm.last_algorithm(), Algorithm::kSharedMemory)
          << "rank " << rank << ": AUTO all_gather_v on one node, every block 1 element";
    }
    for (std::size_t q = 0; q < p; ++q) {
      for (std::size_t i = 0; i < counts[q]; ++i) {
        EXPECT_EQ(whole[displs[q] + i], value(static_cast<int>(q), i))
            << "rank " << rank << " last " << last << " index " << displs[q] + i << " expected "
            << value(static_cast<int>(q), i) << " actual " << whole[displs[q] + i];
        if (HasFailure()) break;
      }
    }
    // The same call but for the last two blocks placed on each other:
    // refused before anything is written, though this rank's own count
    // and both buffers repeat the call the fast path just remembered.
    std::vector<std::size_t> overlapping = displs;
    overlapping[p - 1] = overlapping[p - 2];
    std::fill(whole.begin(), whole.end(), 0);
    EXPECT_THROW(
        comm.all_gather_v(mine.data(), own, whole.data(), counts, overlapping, DataType::kInt64),
        collective::InvalidArgumentError)
        << "rank " << rank << ": overlapping receive blocks after a remembered call, last " << last;
    for (std::size_t i = 0; i < whole.size(); ++i) {
      EXPECT_EQ(whole[i], 0u) << "rank " << rank << ": refused call wrote index " << i;
      if (HasFailure()) break;
    }
  }
}

}  // namespace
