// split's colors: the undefined color gives a null communicator on that
// rank (as MPI_Comm_split gives MPI_COMM_NULL), which refuses every call
// by name; any other negative color is refused on every rank, without
// poisoning the parent.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "collective/collective.h"

namespace collective {
namespace {

// Runs `call`, which must raise InvalidArgumentError containing `needle`.
template <typename Call>
void expect_invalid(Call&& call, const std::string& needle, const std::string& what, int rank) {
  try {
    call();
    ADD_FAILURE() << "rank " << rank << ": " << what << " returned; expected InvalidArgumentError";
  } catch (const InvalidArgumentError& error) {
    EXPECT_NE(std::string(error.what()).find(needle), std::string::npos)
        << "rank " << rank << ": " << what << ": '" << needle << "' missing from: " << error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "rank " << rank << ": " << what << ": wrong error class: " << error.what();
  }
}

// An all_reduce of count elements on `comm`, every element checked.
void expect_sum_works(Communicator& comm, int world_rank, const std::string& what) {
  const int size = comm.size();
  std::vector<int> values(37);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = comm.rank() * 100 + static_cast<int>(i);
  comm.all_reduce(std::span<int>(values.data(), values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const int expected = 100 * size * (size - 1) / 2 + size * static_cast<int>(i);
    ASSERT_EQ(values[i], expected) << "rank " << world_rank << ": " << what << ", index " << i;
  }
}

void expect_null(Communicator& null, int world_rank) {
  EXPECT_TRUE(null.is_null()) << "rank " << world_rank;
  EXPECT_EQ(null.size(), 0) << "rank " << world_rank;
  EXPECT_EQ(null.rank(), -1) << "rank " << world_rank;
  std::vector<float> buffer(4, 1.0f);
  const std::string needle = "the communicator is null";
  expect_invalid([&] { null.all_reduce(std::span<float>(buffer.data(), buffer.size())); }, needle,
                 "all_reduce on the null communicator", world_rank);
  expect_invalid([&] { null.barrier(); }, needle, "barrier on the null communicator", world_rank);
  expect_invalid([&] { null.split(0, 0); }, needle, "split of the null communicator", world_rank);
  expect_invalid([&] { (void)null.topology(); }, needle, "topology of the null communicator",
                 world_rank);
  expect_invalid([&] { (void)null.allocate(64); }, needle, "allocate on the null communicator",
                 world_rank);
  null.free();  // a no-op
}

TEST(SplitTest, UndefinedColorGivesNullCommunicator) {
  auto world = Communicator::world();
  const int rank = world.rank();
  // Odd ranks join no group; even ranks form one.
  const int color = rank % 2 == 0 ? 0 : Communicator::kUndefinedColor;
  auto part = world.split(color, rank);
  if (rank % 2 == 0) {
    ASSERT_FALSE(part.is_null()) << "rank " << rank;
    EXPECT_EQ(part.size(), (world.size() + 1) / 2) << "rank " << rank;
    EXPECT_EQ(part.rank(), rank / 2) << "rank " << rank;
    expect_sum_works(part, rank, "the even ranks' communicator");
  } else {
    expect_null(part, rank);
  }
  expect_sum_works(world, rank, "world after a split with the undefined color");
}

TEST(SplitTest, MpiUndefinedIsTheUndefinedColor) {
  auto world = Communicator::world();
  auto none = world.split(MPI_UNDEFINED, 0);
  expect_null(none, world.rank());
  expect_sum_works(world, world.rank(), "world after every rank passed MPI_UNDEFINED");
}

TEST(SplitTest, NegativeColorRefusedOnEveryRank) {
  auto world = Communicator::world();
  const int rank = world.rank();
  const int last = world.size() - 1;
  for (const int bad : {-1, -7, -32767}) {
    const int color = rank == last ? bad : 0;
    const std::string needle =
        "rank " + std::to_string(last) + " passed color " + std::to_string(bad);
    expect_invalid([&] { (void)world.split(color, rank); }, needle,
                   "split with color " + std::to_string(bad) + " on rank " + std::to_string(last),
                   rank);
  }
  // Not poisoned: the parent still splits and reduces.
  auto all = world.split(0, rank);
  expect_sum_works(all, rank, "split after the refused ones");
  expect_sum_works(world, rank, "world after the refused splits");
}

// shrink() on a healthy communicator: nothing failed, so every rank keeps
// its rank in a copy that works on its own (the deaths are in
// tests/reliability/shrink_driver.py); twice in a row, and of the copy.
TEST(SplitTest, ShrinkOfHealthyCommunicatorIsACopy) {
  auto world = Communicator::world();
  const int rank = world.rank();
  EXPECT_TRUE(world.failed_ranks().empty()) << "rank " << rank;
  for (int round = 0; round < 2; ++round) {
    auto shrunk = world.shrink();
    EXPECT_EQ(shrunk.rank(), rank) << "rank " << rank << " round " << round;
    EXPECT_EQ(shrunk.size(), world.size()) << "rank " << rank << " round " << round;
    EXPECT_TRUE(shrunk.failed_ranks().empty()) << "rank " << rank;
    expect_sum_works(shrunk, rank, "shrunk copy, round " + std::to_string(round));
    auto again = shrunk.shrink();
    expect_sum_works(again, rank, "shrink of the shrunk copy");
  }
  expect_sum_works(world, rank, "world after shrink");
  auto none = world.split(Communicator::kUndefinedColor, 0);
  expect_invalid([&] { (void)none.shrink(); }, "the communicator is null",
                 "shrink of the null communicator", rank);
}

}  // namespace
}  // namespace collective
