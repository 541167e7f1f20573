// send_async / recv_async with real processes: rank 0 exchanges with every
// other rank (two sends, one of them past the eager limit, then a recv),
// between two all_reduce_async on the same communicator, everything
// queued before anything is waited for; every element checked. Argument
// errors are raised by the _async call itself with the blocking call's
// text (a send to oneself, at every rank count). The patterns MPI programs
// and torch's isend/irecv rely on complete without a deadlock: both ranks
// of a pair sending first, a ring where every rank sends before it
// receives (and receives first), and started sends and recvs issued in the
// opposite order to started collectives on the peer.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace {

using collective::Communicator;
using collective::DataType;
using collective::Work;

Communicator& world() {
  static Communicator comm = Communicator::world();
  return comm;
}

std::int32_t value(int from, int message, std::size_t i) {
  return static_cast<std::int32_t>(from * 1000000 + message * 100000 + static_cast<int>(i % 99991));
}

void expect_message(const std::vector<std::int32_t>& got, int from, int message, int rank) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], value(from, message, i))
        << "rank " << rank << " message " << message << " from " << from << " index " << i;
  }
}

TEST(PointToPointAsync, InOrderWithCollectivesInFlightExact) {
  Communicator& comm = world();
  const int rank = comm.rank(), size = comm.size();
  const std::size_t sizes[3] = {5, 200000, 7};  // the second past the eager limit
  std::vector<std::int32_t> reduced(9, rank), reduced_after(9, 2 * rank);
  std::vector<Work> works;
  works.push_back(
      comm.all_reduce_async(reduced.data(), reduced.data(), reduced.size(), DataType::kInt32));
  // Message m of each pair: 0 and 1 from rank 0 to the peer, 2 back.
  std::vector<std::vector<std::vector<std::int32_t>>> buffers(static_cast<std::size_t>(size));
  for (int peer = 1; peer < size; ++peer) {
    if (rank != 0 && rank != peer) continue;
    const int other = rank == 0 ? peer : 0;
    auto& mine = buffers[static_cast<std::size_t>(other)];
    mine.resize(3);
    for (int m = 0; m < 3; ++m) {
      mine[m].resize(sizes[m]);
      const bool sending = (rank == 0) == (m < 2);
      collective::PointToPointOptions options;
      options.tag = m;
      if (sending) {
        for (std::size_t i = 0; i < sizes[m]; ++i) mine[m][i] = value(rank, m, i);
        works.push_back(
            comm.send_async(mine[m].data(), sizes[m], DataType::kInt32, other, options));
      } else {
        std::fill(mine[m].begin(), mine[m].end(), -1);
        works.push_back(
            comm.recv_async(mine[m].data(), sizes[m], DataType::kInt32, other, options));
      }
    }
  }
  works.push_back(comm.all_reduce_async(reduced_after.data(), reduced_after.data(),
                                        reduced_after.size(), DataType::kInt32));
  for (auto it = works.rbegin(); it != works.rend(); ++it) ASSERT_NO_THROW(it->wait());
  const int ranks_sum = size * (size - 1) / 2;
  for (std::size_t i = 0; i < reduced.size(); ++i) {
    ASSERT_EQ(reduced[i], ranks_sum) << "rank " << rank << " index " << i;
    ASSERT_EQ(reduced_after[i], 2 * ranks_sum) << "rank " << rank << " index " << i;
  }
  for (int other = 0; other < size; ++other) {
    const auto& mine = buffers[static_cast<std::size_t>(other)];
    if (mine.empty()) continue;
    for (int m = 0; m < 3; ++m) {
      const bool received = (rank == 0) != (m < 2);
      if (received) expect_message(mine[m], other, m, rank);
    }
  }
}

// Every rank sends `count` elements to rank + shift and receives from
// rank - shift, both started, sends first or recvs first, waited for in
// either order; every element checked.
void shifted_exchange(Communicator& comm, int shift, std::size_t count, bool recv_first,
                      bool wait_recv_first, int message) {
  const int rank = comm.rank(), size = comm.size();
  const int to = (rank + shift) % size, from = (rank - shift + size) % size;
  std::vector<std::int32_t> out(count), in(count, -1);
  for (std::size_t i = 0; i < count; ++i) out[i] = value(rank, message, i);
  collective::PointToPointOptions options;
  options.tag = message;
  std::vector<Work> works;
  auto receive = [&] {
    works.push_back(comm.recv_async(in.data(), count, DataType::kInt32, from, options));
  };
  if (recv_first) receive();
  works.push_back(comm.send_async(out.data(), count, DataType::kInt32, to, options));
  if (!recv_first) receive();
  const bool recv_is_first = recv_first;
  Work& recv_work = works[recv_is_first ? 0 : 1];
  Work& send_work = works[recv_is_first ? 1 : 0];
  if (wait_recv_first) {
    ASSERT_NO_THROW(recv_work.wait()) << "rank " << rank;
    ASSERT_NO_THROW(send_work.wait()) << "rank " << rank;
  } else {
    ASSERT_NO_THROW(send_work.wait()) << "rank " << rank;
    ASSERT_NO_THROW(recv_work.wait()) << "rank " << rank;
  }
  expect_message(in, from, message, rank);
}

TEST(PointToPointAsync, ExchangesAndRingsWithSendsFirstCompleteExact) {
  Communicator& comm = world();
  if (comm.size() < 2) GTEST_SKIP() << "needs a peer";
  int message = 10;
  for (const std::size_t count :
       {std::size_t{0}, std::size_t{3}, std::size_t{1000}, std::size_t{300000}}) {
    for (int shift = 1; shift < comm.size(); ++shift) {
      for (const bool recv_first : {false, true}) {
        for (const bool wait_recv_first : {false, true}) {
          shifted_exchange(comm, shift, count, recv_first, wait_recv_first, ++message);
        }
      }
    }
  }
}

// Rank 0 starts an all_reduce, then a send to rank 1; rank 1 starts the
// recv first, then the all_reduce (collectives keep one order on every
// rank, sends and recvs need not): neither waits for the other's queue.
TEST(PointToPointAsync, SendsAndRecvsDoNotWaitBehindCollectivesInFlight) {
  Communicator& comm = world();
  if (comm.size() < 2) GTEST_SKIP() << "needs a peer";
  const int rank = comm.rank(), size = comm.size();
  std::vector<std::int32_t> reduced(5, rank), message(70000, -1);
  std::vector<Work> works;
  if (rank == 1) {
    works.push_back(comm.recv_async(message.data(), message.size(), DataType::kInt32, 0));
  }
  works.push_back(
      comm.all_reduce_async(reduced.data(), reduced.data(), reduced.size(), DataType::kInt32));
  if (rank == 0) {
    for (std::size_t i = 0; i < message.size(); ++i) message[i] = value(0, 3, i);
    works.push_back(comm.send_async(message.data(), message.size(), DataType::kInt32, 1));
  }
  // Rank 1 waits for its recv before anything else.
  for (Work& work : works) ASSERT_NO_THROW(work.wait()) << "rank " << rank;
  for (std::size_t i = 0; i < reduced.size(); ++i) {
    ASSERT_EQ(reduced[i], size * (size - 1) / 2) << "rank " << rank << " index " << i;
  }
  if (rank == 1) expect_message(message, 0, 3, rank);
}

TEST(PointToPointAsync, ArgumentErrorsAreTheBlockingCallsRaisedAtOnce) {
  Communicator& comm = world();
  std::int32_t data[4] = {1, 2, 3, 4};
  std::string blocking, started;
  try {
    comm.send(data, 4, DataType::kInt32, comm.rank());
  } catch (const collective::InvalidArgumentError& error) {
    blocking = error.what();
  }
  try {
    Work work = comm.send_async(data, 4, DataType::kInt32, comm.rank());
  } catch (const collective::InvalidArgumentError& error) {
    started = error.what();
  }
  EXPECT_FALSE(blocking.empty()) << "rank " << comm.rank();
  EXPECT_EQ(started, blocking) << "rank " << comm.rank();
  try {
    Work work = comm.recv_async(data, 4, DataType::kInt32, comm.size());
    ADD_FAILURE() << "rank " << comm.rank() << ": recv_async from a peer outside was accepted";
  } catch (const collective::InvalidArgumentError& error) {
    EXPECT_NE(std::string(error.what()).find("outside the communicator"), std::string::npos)
        << error.what();
  }
  // Nothing was queued: a blocking call right after runs at once.
  std::int32_t one = 1;
  comm.all_reduce(&one, &one, 1, DataType::kInt32);
  EXPECT_EQ(one, comm.size()) << "rank " << comm.rank();
}

}  // namespace
