// Communicator lifetime, wrapping caller-owned MPI communicators, two
// communicators side by side, forced algorithms and their refusals.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace collective {
namespace {

TEST(CommunicatorTest, WorldMatchesMpi) {
  auto comm = Communicator::world();
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(comm.rank(), rank);
  EXPECT_EQ(comm.size(), size);
}

TEST(CommunicatorTest, WrapsCallerCommunicatorWithoutMixingTraffic) {
  // The caller's own pending message on its communicator must not be
  // consumed by the library's collectives on the wrapped duplicate.
  MPI_Comm mine;
  MPI_Comm_dup(MPI_COMM_WORLD, &mine);
  auto comm = Communicator::from_mpi(MPI_Comm_c2f(mine));
  const int size = comm.size();
  const int rank = comm.rank();
  int token = 1000 + rank;
  MPI_Request request;
  MPI_Isend(&token, 1, MPI_INT, (rank + 1) % size, 0, mine, &request);
  std::vector<int> values(5, rank + 1);
  comm.all_reduce(std::span<int>(values.data(), values.size()));
  for (int v : values) EXPECT_EQ(v, size * (size + 1) / 2);
  int received = -1;
  MPI_Recv(&received, 1, MPI_INT, (rank + size - 1) % size, 0, mine, MPI_STATUS_IGNORE);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  EXPECT_EQ(received, 1000 + (rank + size - 1) % size);
  comm.free();
  MPI_Comm_free(&mine);
}

TEST(CommunicatorTest, ToMpiGivesTheCallerItsOwnCommunicatorOfTheSameGroup) {
  // On a split (odd and even world ranks, reversed) so that the group and
  // order are not simply MPI_COMM_WORLD's.
  auto world = Communicator::world();
  auto half = world.split(world.rank() % 2, -world.rank());
  MPI_Comm mine = MPI_Comm_f2c(half.to_mpi());
  int rank = -1;
  int size = -1;
  MPI_Comm_rank(mine, &rank);
  MPI_Comm_size(mine, &size);
  EXPECT_EQ(rank, half.rank());
  EXPECT_EQ(size, half.size());
  MPI_Errhandler handler;
  MPI_Comm_get_errhandler(mine, &handler);
  EXPECT_EQ(handler, MPI_ERRORS_ARE_FATAL);
  MPI_Errhandler_free(&handler);
  // The caller's message stays on the caller's communicator while the
  // library runs a collective on its own.
  int token = 100 + rank;
  MPI_Request request;
  MPI_Isend(&token, 1, MPI_INT, (rank + 1) % size, 7, mine, &request);
  std::vector<int> values(3, world.rank());
  half.all_reduce(std::span<int>(values.data(), values.size()));
  int expected = 0;
  for (int r = world.rank() % 2; r < world.size(); r += 2) expected += r;
  for (int v : values) EXPECT_EQ(v, expected);
  int received = -1;
  MPI_Recv(&received, 1, MPI_INT, (rank + size - 1) % size, 7, mine, MPI_STATUS_IGNORE);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  EXPECT_EQ(received, 100 + (rank + size - 1) % size);
  MPI_Comm_free(&mine);
  half.free();
  auto freed = Communicator::world();
  freed.free();
  try {
    (void)freed.to_mpi();
    ADD_FAILURE() << "to_mpi on a freed communicator returned";
  } catch (const InvalidArgumentError& error) {
    EXPECT_NE(std::string(error.what()).find("Communicator::to_mpi"), std::string::npos)
        << error.what();
  }
}

// from_mpi refuses what it cannot wrap with InvalidArgumentError naming
// Communicator::from_mpi, on every rank, before any collective MPI call:
// the job goes on and the next call works.
void expect_from_mpi_refused(int handle, const std::vector<std::string>& needles,
                             const std::string& what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    (void)Communicator::from_mpi(handle);
    ADD_FAILURE() << "rank " << rank << ": from_mpi(" << what << ") succeeded";
  } catch (const InvalidArgumentError& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("Communicator::from_mpi"), std::string::npos)
        << "rank " << rank << ": " << text;
    for (const std::string& needle : needles) {
      EXPECT_NE(text.find(needle), std::string::npos)
          << "rank " << rank << ": " << what << ": lacks '" << needle << "': " << text;
    }
  }
}

void expect_world_still_works() {
  auto comm = Communicator::world();
  std::vector<int> values(9, comm.rank() + 1);
  comm.all_reduce(std::span<int>(values.data(), values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(values[i], comm.size() * (comm.size() + 1) / 2)
        << "rank " << comm.rank() << " index " << i;
  }
}

TEST(CommunicatorTest, FromMpiRefusesAnIntercommunicator) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) GTEST_SKIP() << "an intercommunicator joins two groups: needs 2 ranks";
  // Even and odd ranks, joined by an intercommunicator (leaders 0 and 1).
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  MPI_Comm inter = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 1 : 0, 7, &inter),
            MPI_SUCCESS);
  expect_from_mpi_refused(MPI_Comm_c2f(inter),
                          {"intercommunicator", "(rank " + std::to_string(rank) + ")"},
                          "an intercommunicator");
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
  expect_world_still_works();
}

TEST(CommunicatorTest, FromMpiRefusesHandlesThatAreNoCommunicator) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string rank_text = "(rank " + std::to_string(rank) + ")";
  // Values no communicator of this process has: far past any handle
  // table, negative, and a freed communicator's.
  expect_from_mpi_refused(123456789, {"123456789", "not a communicator", rank_text}, "123456789");
  expect_from_mpi_refused(-5, {"-5", "not a communicator", rank_text}, "-5");
  MPI_Comm freed = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &freed);
  const int stale = MPI_Comm_c2f(freed);
  MPI_Comm_free(&freed);
  expect_from_mpi_refused(stale, {std::to_string(stale), "not a communicator"},
                          "a freed communicator's handle");
  expect_from_mpi_refused(MPI_Comm_c2f(MPI_COMM_NULL), {"MPI_COMM_NULL"}, "MPI_COMM_NULL");
  expect_world_still_works();
}

TEST(CommunicatorTest, TwoCommunicatorsSideBySide) {
  auto world = Communicator::world();
  auto halves = world.split(world.rank() % 2, world.rank());
  int half_size = 0;
  for (int r = 0; r < world.size(); ++r) half_size += (r % 2 == world.rank() % 2) ? 1 : 0;
  ASSERT_EQ(halves.size(), half_size);
  for (int round = 0; round < 10; ++round) {
    std::vector<double> a(1000, 1.0);
    std::vector<double> b(1000, 2.0);
    world.all_reduce(std::span<double>(a));
    halves.all_reduce(std::span<double>(b));
    EXPECT_EQ(a[999], world.size());
    EXPECT_EQ(b[0], 2.0 * half_size);
  }
}

TEST(CommunicatorTest, FreedCommunicatorRejectsCalls) {
  auto comm = Communicator::world();
  auto copy = comm;
  comm.free();
  std::vector<float> values(4, 1.0f);
  try {
    copy.all_reduce(std::span<float>(values));
    FAIL() << "expected InvalidArgumentError";
  } catch (const InvalidArgumentError& error) {
    EXPECT_NE(std::string(error.what()).find("freed"), std::string::npos) << error.what();
    EXPECT_EQ(error.rank(), copy.rank());
  }
}

TEST(CommunicatorTest, SequenceNumbersAndLastAlgorithm) {
  auto comm = Communicator::world();
  EXPECT_EQ(comm.sequence_number(), 0u);
  std::vector<float> values(10, 1.0f);
  AllReduceOptions options;
  options.algorithm = Algorithm::kRing;
  comm.all_reduce(values.data(), values.data(), values.size(), DataType::kFloat32, options);
  EXPECT_EQ(comm.sequence_number(), 1u);
  EXPECT_EQ(comm.last_algorithm(), Algorithm::kRing);
  options.algorithm = Algorithm::kMpi;
  comm.all_reduce(values.data(), values.data(), values.size(), DataType::kFloat32, options);
  EXPECT_EQ(comm.last_algorithm(), Algorithm::kMpi);
}

TEST(CommunicatorTest, AutoChoosesBySizeAndIsConsistentAcrossRanks) {
  auto comm = Communicator::world();
  for (std::size_t bytes = 8; bytes <= (std::size_t{1} << 30); bytes *= 8) {
    const Algorithm chosen =
        comm.choose_algorithm(CollectiveKind::kAllReduce, bytes / 4, DataType::kFloat32);
    EXPECT_NE(chosen, Algorithm::kAuto);
    int mine = static_cast<int>(chosen);
    int lowest = 0;
    int highest = 0;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &highest, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(lowest, highest) << "ranks disagree at " << bytes << " B";
  }
}

TEST(CommunicatorTest, ForcedAlgorithmThatCannotServeRaises) {
  auto comm = Communicator::world();
  std::vector<float> values(16, 1.0f);
  BroadcastOptions options;
  options.algorithm = Algorithm::kRecursiveDoubling;
  try {
    comm.broadcast(values.data(), values.size(), DataType::kFloat32, options);
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("broadcast"), std::string::npos) << text;
    EXPECT_NE(text.find("recursive_doubling"), std::string::npos) << text;
  }
  // The communicator stays usable after an UnsupportedError.
  comm.all_reduce(std::span<float>(values));
  EXPECT_EQ(values[0], static_cast<float>(comm.size()));
}

// choose_algorithm checks its own arguments: an enum value out of range is
// InvalidArgumentError naming choose_algorithm and the value, not an
// UnsupportedError naming a collective call that was never made.
TEST(CommunicatorTest, ChooseAlgorithmRefusesValuesOutOfRange) {
  auto comm = Communicator::world();
  const std::uint64_t before = comm.sequence_number();
  struct Case {
    CollectiveKind kind;
    DataType type;
    Algorithm algorithm;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {CollectiveKind::kAllReduce, DataType::kFloat32, static_cast<Algorithm>(99),
       "unknown algorithm (Algorithm value 99)"},
      {CollectiveKind::kBroadcast, DataType::kFloat32, static_cast<Algorithm>(-1),
       "unknown algorithm (Algorithm value -1)"},
      {CollectiveKind::kAllReduce, static_cast<DataType>(42), Algorithm::kAuto,
       "unknown data type (DataType value 42)"},
      {static_cast<CollectiveKind>(77), DataType::kFloat32, Algorithm::kAuto,
       "unknown collective kind (CollectiveKind value 77)"},
  };
  for (const Case& c : cases) {
    try {
      (void)comm.choose_algorithm(c.kind, 1024, c.type, c.algorithm);
      ADD_FAILURE() << "rank " << comm.rank() << ": expected InvalidArgumentError with '"
                    << c.needle << "'";
    } catch (const UnsupportedError& error) {
      ADD_FAILURE() << "rank " << comm.rank() << ": UnsupportedError instead of "
                    << "InvalidArgumentError: " << error.what();
    } catch (const InvalidArgumentError& error) {
      const std::string text = error.what();
      EXPECT_NE(
          text.find("Communicator::choose_algorithm (rank " + std::to_string(comm.rank()) + ")"),
          std::string::npos)
          << text;
      EXPECT_NE(text.find(c.needle), std::string::npos) << text;
      EXPECT_EQ(text.find(" #"), std::string::npos) << "names a call: " << text;
    }
  }
  EXPECT_EQ(comm.sequence_number(), before) << "choose_algorithm used a sequence number";
  std::vector<float> values(16, 1.0f);
  comm.all_reduce(std::span<float>(values));
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(values[i], static_cast<float>(comm.size()))
        << "rank " << comm.rank() << " index " << i;
  }
}

TEST(CommunicatorTest, NcclOnHostBuffersIsRefused) {
  auto comm = Communicator::world();
  std::vector<float> values(16, 1.0f);
  AllReduceOptions options;
  options.algorithm = Algorithm::kNccl;
  options.memory = MemoryKind::kHost;
  EXPECT_THROW(
      comm.all_reduce(values.data(), values.data(), values.size(), DataType::kFloat32, options),
      UnsupportedError);
}

}  // namespace
}  // namespace collective
