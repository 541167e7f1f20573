// Shrinking after a death, with real processes (tests/reliability/shrink_driver.py):
//   collective_shrink_worker <scenario> <second victim or -1> [hierarchical]
// Every rank loops all_reduce (AUTO, exact check) on the world communicator
// until a call fails; the driver SIGKILLs the victims. Each survivor then
// calls shrink() and checks the new communicator: its ranks are the
// survivors in their old order, and all_reduce, all_gather, broadcast and
// all_to_all on it give exact results at several sizes.
//   scenario loop: the kill lands during the loop;
//   scenario idle: every rank stops calling after 300 calls (IDLE), the kill
//     lands while it sleeps, and its next call fails;
//   second victim: that rank, once it failed, says SHRINKING and waits for
//     the driver's SIGKILL, which lands while the others agree;
//   hierarchical: the loop's all_reduce names that algorithm (the calls on
//     the shrunk communicator stay AUTO).
// Lines (stdout):
//   READY rank=<r> pid=<p>
//   PROGRESS rank=<r> calls=<n>
//   FAILED rank=<r> class=<error class> failed=<ranks> what=<message>
//   SHRUNK rank=<old> new_rank=<n> size=<s> failed=<ranks> seconds=<shrink time>
//   FIRST rank=<old>              (its first all_reduce on the survivors returned, exact)
//   CHECKED rank=<old> new_rank=<n> calls=<n>
//   WRONG rank=<old> what=<call, index, expected, actual>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "collective/collective.h"

namespace {

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

std::string joined(const std::vector<int>& ranks) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? "," : "") + std::to_string(ranks[i]);
  return text;
}

[[noreturn]] void wrong(int rank, const std::string& what) {
  say("WRONG rank=" + std::to_string(rank) + " what=" + what);
  std::_Exit(4);
}

// Exact checks on the shrunk communicator; `old_rank` is this rank's rank
// in the world communicator. Returns how many calls it made.
int check_shrunk(collective::Communicator& shrunk, int old_rank,
                 const std::vector<int>& expected_members) {
  const int rank = shrunk.rank();
  const int size = shrunk.size();
  int calls = 0;
  if (size != static_cast<int>(expected_members.size()) ||
      expected_members[static_cast<std::size_t>(rank)] != old_rank) {
    wrong(old_rank, "new rank " + std::to_string(rank) + " of " + std::to_string(size) +
                        ", expected the survivors " + joined(expected_members) + " in order");
  }
  // Every member's old rank, in the new order.
  std::vector<std::int32_t> members(static_cast<std::size_t>(size), -1);
  const std::int32_t mine = old_rank;
  shrunk.all_gather(&mine, members.data(), 1, collective::DataType::kInt32);
  ++calls;
  for (int r = 0; r < size; ++r) {
    if (members[static_cast<std::size_t>(r)] != expected_members[static_cast<std::size_t>(r)]) {
      wrong(old_rank, "all_gather index " + std::to_string(r) + " expected " +
                          std::to_string(expected_members[static_cast<std::size_t>(r)]) +
                          " actual " + std::to_string(members[static_cast<std::size_t>(r)]));
    }
  }
  for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000},
                                  std::size_t{70001}, std::size_t{300000}}) {
    std::vector<std::int64_t> values(count);
    for (std::size_t i = 0; i < count; ++i) {
      values[i] = static_cast<std::int64_t>(old_rank + 1) * static_cast<std::int64_t>(i + 1);
    }
    shrunk.all_reduce(std::span<std::int64_t>(values));
    ++calls;
    std::int64_t weight = 0;
    for (const int member : expected_members) weight += member + 1;
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t expected = weight * static_cast<std::int64_t>(i + 1);
      if (values[i] != expected) {
        wrong(old_rank, "all_reduce of " + std::to_string(count) + " index " + std::to_string(i) +
                            " expected " + std::to_string(expected) + " actual " +
                            std::to_string(values[i]));
      }
    }
    std::vector<std::int64_t> from_last(count, rank == size - 1 ? 5 : -1);
    for (std::size_t i = 0; i < count && rank == size - 1; ++i) {
      from_last[i] = static_cast<std::int64_t>(i) * 3 + 5;
    }
    collective::BroadcastOptions options;
    options.root = size - 1;
    shrunk.broadcast(from_last.data(), count, collective::DataType::kInt64, options);
    ++calls;
    for (std::size_t i = 0; i < count; ++i) {
      if (from_last[i] != static_cast<std::int64_t>(i) * 3 + 5) {
        wrong(old_rank, "broadcast of " + std::to_string(count) + " index " + std::to_string(i) +
                            " expected " + std::to_string(static_cast<std::int64_t>(i) * 3 + 5) +
                            " actual " + std::to_string(from_last[i]));
      }
    }
    const std::size_t block = count / 100 + 1;
    std::vector<std::int32_t> out(block * static_cast<std::size_t>(size));
    std::vector<std::int32_t> in(out.size(), -1);
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = old_rank * 1000000 + static_cast<std::int32_t>(i);
    }
    shrunk.all_to_all(out.data(), in.data(), block, collective::DataType::kInt32);
    ++calls;
    for (int from = 0; from < size; ++from) {
      for (std::size_t i = 0; i < block; ++i) {
        const std::size_t at = static_cast<std::size_t>(from) * block + i;
        const std::int32_t expected =
            expected_members[static_cast<std::size_t>(from)] * 1000000 +
            static_cast<std::int32_t>(static_cast<std::size_t>(rank) * block + i);
        if (in[at] != expected) {
          wrong(old_rank, "all_to_all block " + std::to_string(from) + " index " +
                              std::to_string(i) + " expected " + std::to_string(expected) +
                              " actual " + std::to_string(in[at]));
        }
      }
    }
  }
  return calls;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <loop|idle> <second victim or -1>\n", argv[0]);
    return 2;
  }
  const std::string scenario = argv[1];
  const int second_victim = std::atoi(argv[2]);
  collective::AllReduceOptions loop_options;
  if (argc > 3 && std::string(argv[3]) == "hierarchical") {
    loop_options.algorithm = collective::Algorithm::kHierarchical;
  }
  collective::Environment environment(argc, argv);
  auto world = collective::Communicator::world();
  const int rank = world.rank();
  say("READY rank=" + std::to_string(rank) + " pid=" + std::to_string(getpid()));
  std::vector<float> values(1024);
  long calls = 0;
  try {
    for (;;) {
      if (scenario == "idle" && calls == 300) {
        say("IDLE rank=" + std::to_string(rank));
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      }
      for (std::size_t k = 0; k < values.size(); ++k) values[k] = static_cast<float>(rank + k % 7);
      world.all_reduce(values.data(), values.data(), values.size(), collective::DataType::kFloat32,
                       loop_options);
      ++calls;
      const auto expected = static_cast<float>(world.size() * (world.size() - 1) / 2);
      for (std::size_t k = 0; k < values.size(); ++k) {
        const float want = expected + static_cast<float>(world.size() * static_cast<int>(k % 7));
        if (values[k] != want) {
          wrong(rank, "world all_reduce index " + std::to_string(k) + " expected " +
                          std::to_string(want) + " actual " + std::to_string(values[k]));
        }
      }
      if (calls % 1000 == 0) {
        say("PROGRESS rank=" + std::to_string(rank) + " calls=" + std::to_string(calls));
      }
    }
  } catch (const collective::PeerFailedError& error) {
    say("FAILED rank=" + std::to_string(rank) +
        " class=PeerFailedError failed=" + joined(error.failed_ranks()) + " what=" + error.what());
  }
  if (rank == second_victim) {
    say("SHRINKING rank=" + std::to_string(rank));
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // the driver kills it
  }
  const auto start = std::chrono::steady_clock::now();
  collective::Communicator shrunk = world.shrink();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::vector<int> failed = world.failed_ranks();
  std::vector<int> members;
  for (int r = 0; r < world.size(); ++r) {
    bool gone = false;
    for (const int f : failed) gone = gone || f == r;
    if (!gone) members.push_back(r);
  }
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%.4f", seconds);
  say("SHRUNK rank=" + std::to_string(rank) + " new_rank=" + std::to_string(shrunk.rank()) +
      " size=" + std::to_string(shrunk.size()) + " failed=" + joined(failed) + " seconds=" + stamp);
  // The first call on the survivors: an 8-byte all_reduce.
  std::int64_t first = rank;
  shrunk.all_reduce(&first, &first, 1, collective::DataType::kInt64);
  std::int64_t survivors_sum = 0;
  for (const int member : members) survivors_sum += member;
  if (first != survivors_sum) {
    wrong(rank, "first all_reduce expected " + std::to_string(survivors_sum) + " actual " +
                    std::to_string(first));
  }
  say("FIRST rank=" + std::to_string(rank));
  const int checked = check_shrunk(shrunk, rank, members);
  say("CHECKED rank=" + std::to_string(rank) + " new_rank=" + std::to_string(shrunk.rank()) +
      " calls=" + std::to_string(checked));
  // The world communicator stays failed: its next call raises again.
  try {
    world.all_reduce(std::span<float>(values));
    wrong(rank, "the world communicator took a call after shrink");
  } catch (const collective::PeerFailedError&) {
  }
  shrunk.free();
  return 0;
}
