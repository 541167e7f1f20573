// Communicator::send and recv: exact data at every size around the eager
// limit and past a piece, every dtype's bytes, calls in order with tags,
// mixed with collectives (whose sequence numbers they do not use), and the
// pairing rules: a tag, count or type that disagrees, or two ranks both
// sending, is a MismatchError on both ranks with the receive buffer
// untouched and the communicator still usable; a peer that never calls is a
// TimeoutError naming it. Registered again with 4 KiB MPI pieces.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace {

using collective::Communicator;
using collective::DataType;
using collective::PointToPointOptions;

constexpr std::uint8_t kUntouched = 0xA5;

std::uint8_t byte_of(int from, int to, std::size_t i, int salt) {
  return static_cast<std::uint8_t>((from * 131 + to * 31 + static_cast<int>(i % 251) + salt) % 256);
}

// Even ranks send first, odd ranks receive first: with synchronous sends a
// ring of ranks that all send first would wait for each other.
void ring_exchange(Communicator& comm, std::size_t count, DataType type, int tag, int salt) {
  const int rank = comm.rank();
  const int size = comm.size();
  const int next = (rank + 1) % size;
  const int previous = (rank + size - 1) % size;
  const std::size_t bytes = count * collective::element_size(type);
  std::vector<std::uint8_t> out(bytes), in(bytes + 16, kUntouched);
  for (std::size_t i = 0; i < bytes; ++i) out[i] = byte_of(rank, next, i, salt);
  PointToPointOptions options;
  options.tag = tag;
  auto do_send = [&] { comm.send(out.data(), count, type, next, options); };
  auto do_recv = [&] { comm.recv(in.data(), count, type, previous, options); };
  if (rank % 2 == 0) {
    do_send();
    do_recv();
  } else {
    do_recv();
    do_send();
  }
  for (std::size_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(in[i], byte_of(previous, rank, i, salt))
        << "rank " << rank << " index " << i << " count " << count << " type "
        << collective::to_string(type);
  }
  for (std::size_t i = bytes; i < in.size(); ++i) {
    ASSERT_EQ(in[i], kUntouched) << "rank " << rank << " wrote past the buffer at " << i;
  }
}

TEST(PointToPoint, RingAtEverySizeAndType) {
  Communicator comm = Communicator::world();
  if (comm.size() < 2) GTEST_SKIP() << "needs a peer";
  int salt = 0;
  for (std::size_t count : {0, 1, 7, 511, 512, 513, 4095, 4096, 4097, 300000}) {
    ring_exchange(comm, count, DataType::kUInt8, 3, ++salt);
  }
  for (int t = 0; t < collective::kNumDataTypes; ++t) {
    ring_exchange(comm, 1031, static_cast<DataType>(t), t, ++salt);
  }
}

TEST(PointToPoint, MixedWithCollectivesLeavesTheirSequenceAlone) {
  Communicator comm = Communicator::world();
  if (comm.size() < 2) GTEST_SKIP() << "needs a peer";
  for (int round = 0; round < 5; ++round) {
    ring_exchange(comm, 100 + static_cast<std::size_t>(round), DataType::kInt32, round, round);
    std::int64_t value = comm.rank() + 1;
    comm.all_reduce(&value, &value, 1, DataType::kInt64);
    const std::int64_t p = comm.size();
    ASSERT_EQ(value, p * (p + 1) / 2) << "rank " << comm.rank();
    ASSERT_EQ(comm.sequence_number(), static_cast<std::uint64_t>(round + 1));
  }
}

// Rank 0 sends to rank 1 with `send_*`; rank 1 receives with `recv_*`.
void expect_mismatch(Communicator& comm, std::size_t send_count, DataType send_type, int send_tag,
                     std::size_t recv_count, DataType recv_type, int recv_tag,
                     const std::string& expected_text) {
  const int rank = comm.rank();
  std::vector<std::uint8_t> buffer(64, kUntouched);
  PointToPointOptions options;
  try {
    if (rank == 0) {
      options.tag = send_tag;
      comm.send(buffer.data(), send_count, send_type, 1, options);
    } else if (rank == 1) {
      options.tag = recv_tag;
      comm.recv(buffer.data(), recv_count, recv_type, 0, options);
    } else {
      return;
    }
    FAIL() << "rank " << rank << ": no MismatchError for " << expected_text;
  } catch (const collective::MismatchError& error) {
    EXPECT_NE(std::string(error.what()).find(expected_text), std::string::npos)
        << "rank " << rank << ": " << error.what();
  }
  for (std::size_t i = 0; i < buffer.size(); ++i) {
    ASSERT_EQ(buffer[i], kUntouched) << "rank " << rank << " buffer touched at " << i;
  }
}

TEST(PointToPoint, DisagreementIsAMismatchOnBothRanks) {
  Communicator comm = Communicator::world();
  if (comm.size() < 2) GTEST_SKIP() << "needs a peer";
  expect_mismatch(comm, 7, DataType::kUInt8, 1, 9, DataType::kUInt8, 1,
                  "rank 0's send #0 of 7 x uint8 with tag 1 met rank 1's recv #0 of 9 x uint8");
  expect_mismatch(comm, 4, DataType::kInt32, 1, 4, DataType::kInt32, 2,
                  "rank 0's send #1 of 4 x int32 with tag 1 met rank 1's recv #1 of 4 x int32 "
                  "with tag 2");
  expect_mismatch(comm, 4, DataType::kInt32, 0, 4, DataType::kFloat32, 0, "x float32");
  // Large enough not to travel in the first message: still untouched.
  std::vector<std::uint8_t> big(100000, kUntouched);
  try {
    if (comm.rank() == 0) comm.send(big.data(), 100000, DataType::kUInt8, 1);
    if (comm.rank() == 1) comm.recv(big.data(), 99999, DataType::kUInt8, 0);
    if (comm.rank() <= 1) FAIL() << "rank " << comm.rank() << ": no MismatchError";
  } catch (const collective::MismatchError&) {
  }
  for (std::size_t i = 0; i < big.size(); ++i) ASSERT_EQ(big[i], kUntouched) << "index " << i;
  // The communicator is still usable, and the pairs start again in step.
  comm.barrier();
  ring_exchange(comm, 33, DataType::kUInt8, 0, 99);
}

// A blocking send against the peer's started send and recv pairs (the
// started calls run beside each other), small and past the eager limit.
// Both ranks in a blocking send to each other wait for receives neither
// makes (synchronous sends, as two MPI_Ssend): both end in a TimeoutError
// naming the peer and the verdict they waited for; send and recv of that
// communicator are closed then, its collectives go on.
TEST(PointToPoint, BlockingAgainstStartedPairsAndBothBlockingTimesOut) {
  Communicator comm = Communicator::world();
  if (comm.size() < 2) GTEST_SKIP() << "needs a peer";
  const int rank = comm.rank();
  if (rank <= 1) {
    const int peer = 1 - rank;
    for (const std::size_t count : {std::size_t{12}, std::size_t{50000}}) {
      std::vector<std::int32_t> out(count), in(count, -1);
      for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<std::int32_t>(rank * 1000 + i);
      if (rank == 0) {
        comm.send(out.data(), count, DataType::kInt32, peer);
        comm.recv(in.data(), count, DataType::kInt32, peer);
      } else {
        collective::Work sent = comm.send_async(out.data(), count, DataType::kInt32, peer);
        collective::Work received = comm.recv_async(in.data(), count, DataType::kInt32, peer);
        received.wait();
        sent.wait();
      }
      for (std::size_t i = 0; i < count; ++i) {
        ASSERT_EQ(in[i], static_cast<std::int32_t>(peer * 1000 + i))
            << "rank " << rank << " count " << count << " index " << i;
      }
    }
    std::vector<std::uint8_t> data(10, kUntouched);
    PointToPointOptions options;
    options.timeout = std::chrono::milliseconds(1500);
    try {
      comm.send(data.data(), 10, DataType::kUInt8, peer, options);
      FAIL() << "rank " << rank << ": no TimeoutError";
    } catch (const collective::TimeoutError& error) {
      const std::string text = error.what();
      EXPECT_NE(text.find("waiting for rank " + std::to_string(peer)), std::string::npos) << text;
      EXPECT_NE(text.find("the matching recv's verdict"), std::string::npos) << text;
    }
    for (std::size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], kUntouched) << "index " << i;
    try {
      comm.recv(data.data(), 10, DataType::kUInt8, peer);
      FAIL() << "rank " << rank << ": recv after the failure raised nothing";
    } catch (const collective::CommunicationError& error) {
      EXPECT_NE(std::string(error.what()).find("send and recv unusable"), std::string::npos)
          << error.what();
    }
  }
  // The collectives go on.
  std::int64_t value = rank + 1;
  comm.all_reduce(&value, &value, 1, DataType::kInt64);
  const std::int64_t p = comm.size();
  ASSERT_EQ(value, p * (p + 1) / 2) << "rank " << rank;
}

TEST(PointToPoint, BadArgumentsAreRefusedBeforeAnyMessage) {
  Communicator comm = Communicator::world();
  std::uint8_t byte = 0;
  EXPECT_THROW(comm.send(&byte, 1, DataType::kUInt8, comm.size()),
               collective::InvalidArgumentError);
  EXPECT_THROW(comm.recv(&byte, 1, DataType::kUInt8, comm.rank()),
               collective::InvalidArgumentError);
  PointToPointOptions negative;
  negative.tag = -1;
  EXPECT_THROW(comm.send(&byte, 1, DataType::kUInt8, (comm.rank() + 1) % comm.size(), negative),
               collective::InvalidArgumentError);
  EXPECT_THROW(comm.send(nullptr, 1, DataType::kUInt8, (comm.rank() + 1) % comm.size()),
               collective::InvalidArgumentError);
  PointToPointOptions ring;
  ring.algorithm = collective::Algorithm::kRing;
  if (comm.size() > 1) {
    EXPECT_THROW(comm.send(&byte, 1, DataType::kUInt8, (comm.rank() + 1) % comm.size(), ring),
                 collective::UnsupportedError);
  }
  // Nothing went out: collectives and pairs still line up.
  comm.barrier();
  if (comm.size() > 1) ring_exchange(comm, 5, DataType::kUInt8, 0, 5);
}

TEST(PointToPoint, PeerThatNeverCallsIsATimeoutNamingIt) {
  Communicator world = Communicator::world();
  if (world.size() < 2) GTEST_SKIP() << "needs a peer";
  // On a communicator of its own: the unanswered message stays there.
  Communicator comm = world.split(0, world.rank());
  if (comm.rank() == 0) {
    PointToPointOptions options;
    options.timeout = std::chrono::milliseconds(300);
    std::uint8_t byte = 1;
    try {
      comm.send(&byte, 1, DataType::kUInt8, 1, options);
      FAIL() << "send to a rank that never receives returned";
    } catch (const collective::TimeoutError& error) {
      EXPECT_NE(std::string(error.what()).find("rank 1"), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find("send #0 to rank 1"), std::string::npos)
          << error.what();
    }
  }
  world.barrier();
}

}  // namespace
