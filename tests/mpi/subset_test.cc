// Communicator::subset: made by the listed ranks alone (the ranks left out
// never call it and meanwhile make subsets of their own), ranked in the
// listed order; a bad list refused on the caller, lists that differ
// refused on every listed rank naming both, a listed rank that never calls
// ending the others' call in a TimeoutError. COLLECTIVE_TIMEOUT is short
// in this test's registration (10 s: the timeout case waits it out).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace collective {
namespace {

template <typename Error, typename Call>
void expect_error(Call&& call, const std::string& needle, const std::string& what, int rank) {
  try {
    call();
    ADD_FAILURE() << "rank " << rank << ": " << what << " returned; expected an error with '"
                  << needle << "'";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(needle), std::string::npos)
        << "rank " << rank << ": " << what << ": '" << needle << "' missing from: " << error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "rank " << rank << ": " << what << ": wrong error class: " << error.what();
  }
}

// The subset's rank r is the listed ranks[r]: an all_gather of the world
// ranks gives the list back, and an all_reduce sums the members' values.
void expect_ranked_as_listed(Communicator& part, const std::vector<int>& ranks, int world_rank) {
  ASSERT_EQ(part.size(), static_cast<int>(ranks.size())) << "rank " << world_rank;
  const auto position = std::find(ranks.begin(), ranks.end(), world_rank) - ranks.begin();
  ASSERT_EQ(part.rank(), static_cast<int>(position)) << "rank " << world_rank;
  std::vector<int> mine{world_rank};
  std::vector<int> gathered(ranks.size(), -1);
  part.all_gather(mine.data(), gathered.data(), 1, DataType::kInt32);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    EXPECT_EQ(gathered[i], ranks[i]) << "rank " << world_rank << ": the subset's rank " << i;
  }
  std::vector<long> values(1000);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = world_rank * 1000L + long(i);
  part.all_reduce(std::span<long>(values));
  const long rank_sum = std::accumulate(ranks.begin(), ranks.end(), 0L);
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(values[i], rank_sum * 1000 + long(ranks.size() * i))
        << "rank " << world_rank << ": all_reduce on the subset, index " << i;
  }
}

// A rank may arrive here a timeout or two before the others (the timeout
// case): this call waits longer.
void expect_world_works(Communicator& world) {
  std::vector<int> values{world.rank() + 1};
  AllReduceOptions options;
  options.timeout = std::chrono::seconds(60);
  world.all_reduce(std::span<int>(values), options);
  EXPECT_EQ(values[0], world.size() * (world.size() + 1) / 2) << "rank " << world.rank();
}

TEST(SubsetTest, MadeByTheListedRanksAloneWhileTheOthersMakeTheirs) {
  auto world = Communicator::world();
  const int rank = world.rank();
  const int size = world.size();
  // The even ranks, highest first, and the odd ranks, in order: each group
  // makes its subset while the other is busy with its own.
  std::vector<int> evens, odds;
  for (int r = size - 1; r >= 0; --r) {
    if (r % 2 == 0) evens.push_back(r);
  }
  for (int r = 1; r < size; r += 2) odds.push_back(r);
  const std::vector<int>& mine = rank % 2 == 0 ? evens : odds;
  for (int round = 0; round < 3; ++round) {
    auto part = world.subset(mine);
    expect_ranked_as_listed(part, mine, rank);
    // A subset of the subset: its first two ranks (or its only one).
    if (part.rank() < 2) {
      std::vector<int> first_two{0};
      if (part.size() > 1) first_two.push_back(1);
      auto inner = part.subset(first_two);
      std::vector<int> inner_world_ranks;
      for (int r : first_two) inner_world_ranks.push_back(mine[static_cast<std::size_t>(r)]);
      EXPECT_EQ(inner.size(), static_cast<int>(first_two.size())) << "rank " << rank;
      EXPECT_EQ(inner.rank(), part.rank()) << "rank " << rank;
    }
  }
  expect_world_works(world);
}

TEST(SubsetTest, TheWholeCommunicatorInAnyOrder) {
  auto world = Communicator::world();
  std::vector<int> reversed(static_cast<std::size_t>(world.size()));
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  auto part = world.subset(reversed);
  expect_ranked_as_listed(part, reversed, world.rank());
  expect_world_works(world);
}

TEST(SubsetTest, ABadListIsRefusedOnTheCallerAlone) {
  auto world = Communicator::world();
  const int rank = world.rank();
  const int size = world.size();
  expect_error<InvalidArgumentError>([&] { world.subset({}); }, "the list of ranks is empty",
                                     "an empty list", rank);
  expect_error<InvalidArgumentError>(
      [&] {
        world.subset({rank, size});
      },
      "rank " + std::to_string(size) + " is outside", "a rank past the end", rank);
  expect_error<InvalidArgumentError>(
      [&] {
        world.subset({rank, -1});
      },
      "rank -1 is outside", "a negative rank", rank);
  expect_error<InvalidArgumentError>(
      [&] {
        world.subset({rank, rank});
      },
      "rank " + std::to_string(rank) + " is listed twice", "a rank listed twice", rank);
  if (size > 1) {
    expect_error<InvalidArgumentError>([&] { world.subset({(rank + 1) % size}); }, "is not listed",
                                       "a list without the caller", rank);
  }
  expect_world_works(world);  // nothing was sent: still usable
}

TEST(SubsetTest, ListsThatDifferAreRefusedOnEveryListedRank) {
  auto world = Communicator::world();
  const int rank = world.rank();
  const int size = world.size();
  if (size < 3)
    GTEST_SKIP() << "two lists with the same first rank and the caller in both: 3 ranks";
  // Ranks 0, 1 and 2 take part; 0 and 1 list [0, 1, 2], 2 lists [0, 2, 1].
  if (rank <= 2) {
    const std::vector<int> ranks =
        rank == 2 ? std::vector<int>{0, 2, 1} : std::vector<int>{0, 1, 2};
    const std::string needle =
        rank == 0   ? "rank 2 passed other ranks than rank 0 (the first listed): it listed [0, 2, "
                      "1], rank 0 listed [0, 1, 2]"
        : rank == 1 ? "rank 2 passed other ranks than rank 0 (the first listed); this rank listed "
                      "[0, 1, 2]"
                    : "this rank passed other ranks than rank 0 (the first listed); this rank "
                      "listed [0, 2, 1]";
    expect_error<MismatchError>([&] { world.subset(ranks); }, needle, "lists that differ", rank);
  }
  expect_world_works(world);  // every message was taken: still usable
}

TEST(SubsetTest, AListedRankThatNeverCallsEndsInATimeout) {
  auto world = Communicator::world();
  const int rank = world.rank();
  const int size = world.size();
  if (size < 2) GTEST_SKIP() << "a listed rank that stays away: 2 ranks";
  auto parent = world.split(0, rank);
  // Every rank is listed; the last one never calls.
  std::vector<int> everyone(static_cast<std::size_t>(size));
  std::iota(everyone.begin(), everyone.end(), 0);
  if (rank != size - 1) {
    const std::string needle =
        rank == 0 ? "every listed rank to call subset" : "the first listed rank's answer";
    expect_error<TimeoutError>([&] { parent.subset(everyone); }, needle,
                               "a subset whose last rank never calls", rank);
    // The parent is unusable now, by name.
    expect_error<CommunicationError>([&] { parent.subset(everyone); },
                                     "unusable after an earlier failure", "the parent after it",
                                     rank);
  }
  expect_world_works(world);  // another communicator: unaffected
}

}  // namespace
}  // namespace collective
