// Threads on separate communicators, side by side (communicator.h's
// promise): every thread owns one Communicator and runs many collectives
// on it while the others do the same on theirs, every algorithm forced in
// turn (mpi included), every element of every result checked exactly.
//
//   concurrent_communicators_test --init MODE [--threads T] [--calls N]
//                                 [--algorithm NAME]
//
// MODE says who initialises MPI and at which thread level:
//   environment  collective::Environment (the library chooses)
//   multiple | serialized | funneled  the program calls MPI_Init_thread
//     itself at that level and wraps MPI_COMM_WORLD with from_mpi.
// Under funneled only the main thread may call MPI: the other threads'
// calls must be refused with InvalidArgumentError naming the thread level,
// and the main thread's must work.
// A failure on any rank (a wrong element, an exception) prints the rank,
// thread, algorithm, call and index, and fails the run on every rank.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collective/collective.h"

namespace {

using namespace collective;

std::mutex g_print_mutex;
std::atomic<int> g_failures{0};
std::atomic<long> g_calls{0};   // collectives checked on this rank
std::atomic<int> g_refused{0};  // splits refused by the creation rule
int g_rank = 0;
int g_size = 1;

void fail(const std::string& text) {
  g_failures.fetch_add(1);
  std::lock_guard<std::mutex> lock(g_print_mutex);
  std::fprintf(stderr, "[rank %d] FAILED: %s\n", g_rank, text.c_str());
}

// Rank r's element j of call i on thread t: distinct per rank, thread,
// call and index, small enough that sums of 4 ranks stay exact in int32.
std::int32_t input(int rank, int thread, std::size_t call, std::size_t j) {
  return static_cast<std::int32_t>(rank * 100000 + thread * 1000 + (call * 7 + j) % 997);
}

// Element counts: mostly small (latency-bound paths, inline boxes), now and
// then a few pages (chunked and segmented paths).
std::size_t count_of(std::size_t call) { return call % 10 == 9 ? 3 * 4096 + 5 : 1 + call % 17; }

struct Worker {
  int thread;
  Communicator* comm;
  std::vector<Algorithm> all_reduce_algorithms;
  std::size_t calls;
  std::string where(Algorithm algorithm, std::size_t call, const char* what) const {
    std::ostringstream text;
    text << "thread " << thread << " algorithm " << to_string(algorithm) << " call " << call << " "
         << what;
    return text.str();
  }

  bool check(const std::vector<std::int32_t>& got, std::size_t j, std::int64_t expected,
             Algorithm algorithm, std::size_t call, const char* what) const {
    if (got[j] == expected) return true;
    fail(where(algorithm, call, what) + " index " + std::to_string(j) + ": expected " +
         std::to_string(expected) + ", got " + std::to_string(got[j]));
    return false;
  }

  // One call: all_reduce mostly, every fifth call another collective.
  void one_call(Algorithm algorithm, std::size_t call) const {
    const int size = comm->size();
    const int rank = comm->rank();
    const std::size_t count = count_of(call);
    // Sum over ranks of input(r, ...): every rank's term plus the rank part.
    auto sum_at = [&](std::size_t j) {
      std::int64_t sum = 0;
      for (int r = 0; r < size; ++r) sum += input(r, thread, call, j);
      return sum;
    };
    // Only all_reduce has algorithms beyond ring and mpi; the others take
    // ring, mpi or auto in the same rotation.
    const bool general = algorithm == Algorithm::kAuto || algorithm == Algorithm::kRing ||
                         algorithm == Algorithm::kMpi;
    const int kind = general ? static_cast<int>(call % 5) : 0;
    if (kind == 0 || kind == 4) {
      std::vector<std::int32_t> send(count), recv(count, -1);
      for (std::size_t j = 0; j < count; ++j) send[j] = input(rank, thread, call, j);
      AllReduceOptions options;
      options.algorithm = algorithm;
      comm->all_reduce(send.data(), recv.data(), count, DataType::kInt32, options);
      for (std::size_t j = 0; j < count; ++j) {
        if (!check(recv, j, sum_at(j), algorithm, call, "all_reduce")) return;
      }
    } else if (kind == 1) {
      std::vector<std::int32_t> send(count * static_cast<std::size_t>(size)), recv(count, -1);
      for (std::size_t j = 0; j < send.size(); ++j) send[j] = input(rank, thread, call, j);
      ReduceScatterOptions options;
      options.algorithm = algorithm;
      comm->reduce_scatter(send.data(), recv.data(), count, DataType::kInt32, options);
      for (std::size_t j = 0; j < count; ++j) {
        if (!check(recv, j, sum_at(static_cast<std::size_t>(rank) * count + j), algorithm, call,
                   "reduce_scatter")) {
          return;
        }
      }
    } else if (kind == 2) {
      std::vector<std::int32_t> send(count), recv(count * static_cast<std::size_t>(size), -1);
      for (std::size_t j = 0; j < count; ++j) send[j] = input(rank, thread, call, j);
      AllGatherOptions options;
      options.algorithm = algorithm;
      comm->all_gather(send.data(), recv.data(), count, DataType::kInt32, options);
      for (int r = 0; r < size; ++r) {
        for (std::size_t j = 0; j < count; ++j) {
          const std::size_t at = static_cast<std::size_t>(r) * count + j;
          if (!check(recv, at, input(r, thread, call, j), algorithm, call, "all_gather")) return;
        }
      }
    } else {
      const int root = static_cast<int>(call % static_cast<std::size_t>(size));
      std::vector<std::int32_t> buffer(count, -1);
      if (rank == root) {
        for (std::size_t j = 0; j < count; ++j) buffer[j] = input(root, thread, call, j);
      }
      BroadcastOptions options;
      options.algorithm = algorithm;
      options.root = root;
      comm->broadcast(buffer.data(), count, DataType::kInt32, options);
      for (std::size_t j = 0; j < count; ++j) {
        if (!check(buffer, j, input(root, thread, call, j), algorithm, call, "broadcast")) return;
      }
      std::vector<std::int32_t> send(count), recv(count, -1);
      for (std::size_t j = 0; j < count; ++j) send[j] = input(rank, thread, call, j);
      ReduceOptions reduce_options;
      reduce_options.algorithm = algorithm;
      reduce_options.root = root;
      comm->reduce(send.data(), recv.data(), count, DataType::kInt32, reduce_options);
      if (rank == root) {
        for (std::size_t j = 0; j < count; ++j) {
          if (!check(recv, j, sum_at(j), algorithm, call, "reduce")) return;
        }
      }
      BarrierOptions barrier_options;
      // ring has no barrier; recursive_doubling's stands in for it.
      barrier_options.algorithm =
          algorithm == Algorithm::kRing ? Algorithm::kRecursiveDoubling : algorithm;
      comm->barrier(barrier_options);
    }
  }

  void run() const {
    for (Algorithm algorithm : all_reduce_algorithms) {
      for (std::size_t call = 0; call < calls; ++call) {
        try {
          one_call(algorithm, call);
          g_calls.fetch_add(1, std::memory_order_relaxed);
        } catch (const std::exception& error) {
          fail(where(algorithm, call, "raised") + ": " + error.what());
          return;  // the communicator may be poisoned; the others go on
        }
      }
    }
  }
};

std::vector<Algorithm> algorithms_for(const Communicator& comm, const std::string& only) {
  if (!only.empty()) {
    const std::optional<Algorithm> algorithm = parse_algorithm(only);
    if (!algorithm) {
      std::fprintf(stderr, "unknown --algorithm %s\n", only.c_str());
      std::exit(2);
    }
    return {*algorithm};
  }
  std::vector<Algorithm> algorithms = {Algorithm::kAuto, Algorithm::kRing,
                                       Algorithm::kRecursiveDoubling, Algorithm::kMpi,
                                       Algorithm::kHierarchical};
  if (comm.topology().node_count() == 1) algorithms.push_back(Algorithm::kSharedMemory);
  return algorithms;
}

// T threads, each on its own communicator, all collectives checked.
void run_side_by_side(const Communicator& world, int threads, std::size_t calls,
                      const std::string& only) {
  // The main thread makes them: making communicators from one parent in
  // several threads at once would be concurrent collectives on one MPI
  // communicator, which MPI forbids at every thread level.
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int t = 0; t < threads; ++t) {
    comms.push_back(std::make_unique<Communicator>(world.split(0, world.rank())));
  }
  const std::vector<Algorithm> algorithms = algorithms_for(world, only);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] { Worker{t, comms[t].get(), algorithms, calls}.run(); });
  }
  for (std::thread& thread : pool) thread.join();
}

// Each thread makes its own communicator from the world at the same time
// as the others (Communicator::world() under Environment, from_mpi
// otherwise), then runs the same mix on it. Which thread of one rank pairs
// with which of another is the order in which each rank's threads got
// their turn (communicator.h), so each communicator takes rank 0's thread
// number, broadcast over it, as the number its inputs are made of.
void make_in_threads(const std::string& mode, const Communicator& world, int threads,
                     std::size_t calls, const std::string& only) {
  const std::vector<Algorithm> algorithms = algorithms_for(world, only);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        Communicator comm = mode == "environment"
                                ? Communicator::world()
                                : Communicator::from_mpi(MPI_Comm_c2f(MPI_COMM_WORLD));
        std::int32_t id = t;
        comm.broadcast(&id, 1, DataType::kInt32);
        Worker{id, &comm, algorithms, calls}.run();
      } catch (const std::exception& error) {
        fail("thread " + std::to_string(t) + " making its communicator raised: " + error.what());
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
}

// Each thread splits its own communicator while the others split theirs,
// then reduces on the child. At MPI_THREAD_MULTIPLE every split must work;
// below it a split may be refused, but then on every rank of it alike
// (never a hang, never one rank alone).
void split_side_by_side(const Communicator& world, int threads, bool all_must_work) {
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int t = 0; t < threads; ++t) {
    comms.push_back(std::make_unique<Communicator>(world.split(0, world.rank())));
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      Communicator& comm = *comms[t];
      for (int round = 0; round < 6; ++round) {
        std::int32_t worked = 1;
        std::optional<Communicator> child;
        try {
          child.emplace(comm.split(0, comm.size() - 1 - comm.rank()));
        } catch (const InvalidArgumentError& error) {
          worked = 0;
          g_refused.fetch_add(1);
          if (all_must_work) fail("thread " + std::to_string(t) + " split raised: " + error.what());
          if (std::strstr(error.what(), "one communicator at a time") == nullptr) {
            fail("thread " + std::to_string(t) +
                 " split refused without the rule: " + error.what());
          }
        } catch (const std::exception& error) {
          fail("thread " + std::to_string(t) + " split raised: " + error.what());
          return;
        }
        try {
          std::int32_t outcome[2] = {worked, -worked};
          std::int32_t agreed[2] = {0, 0};
          AllReduceOptions options;
          options.op = ReduceOp::kMin;
          comm.all_reduce(outcome, agreed, 2, DataType::kInt32, options);
          if (agreed[0] != -agreed[1]) {
            fail("thread " + std::to_string(t) + " round " + std::to_string(round) +
                 ": the split worked on some ranks and was refused on others");
            return;
          }
          if (!child) continue;
          const std::int32_t mine = child->rank() + 1;
          std::int32_t sum = 0;
          child->all_reduce(&mine, &sum, 1, DataType::kInt32);
          const std::int32_t expected = child->size() * (child->size() + 1) / 2;
          if (sum != expected) {
            fail("thread " + std::to_string(t) + " round " + std::to_string(round) +
                 " child all_reduce: expected " + std::to_string(expected) + ", got " +
                 std::to_string(sum));
          }
        } catch (const std::exception& error) {
          fail("thread " + std::to_string(t) + " round " + std::to_string(round) +
               " raised: " + error.what());
          return;
        }
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
}

// Under FUNNELED: another thread's call is refused, naming the level and
// the operation; the main thread's call works.
void funneled_rule(const Communicator& world) {
  Communicator comm = world.split(0, world.rank());
  std::thread other([&] {
    std::int32_t one = 1;
    std::int32_t sum = 0;
    try {
      comm.all_reduce(&one, &sum, 1, DataType::kInt32);
      fail(
          "all_reduce from a thread other than the main thread was not refused at "
          "MPI_THREAD_FUNNELED");
    } catch (const InvalidArgumentError& error) {
      if (std::strstr(error.what(), "MPI_THREAD_FUNNELED") == nullptr ||
          std::strstr(error.what(), "all_reduce") == nullptr) {
        fail(std::string("the refusal names neither the level nor the operation: ") + error.what());
      }
    }
  });
  other.join();
  std::int32_t one = 1;
  std::int32_t sum = 0;
  comm.all_reduce(&one, &sum, 1, DataType::kInt32);
  if (sum != comm.size()) {
    fail("main thread all_reduce: expected " + std::to_string(comm.size()) + ", got " +
         std::to_string(sum));
  }
}

// Below MPI_THREAD_MULTIPLE an _async call is refused at once, naming the
// level, on the main thread too (the progress thread would call MPI beside
// the program's threads); the communicator stays usable.
void async_refused_below_multiple(const Communicator& world) {
  Communicator comm = world.split(0, world.rank());
  int provided = 0;
  MPI_Query_thread(&provided);
  std::int32_t one = 1;
  std::int32_t sum = 0;
  try {
    comm.all_reduce_async(&one, &sum, 1, DataType::kInt32).wait();
    if (provided < MPI_THREAD_MULTIPLE) {
      fail("all_reduce_async was not refused below MPI_THREAD_MULTIPLE");
    }
  } catch (const InvalidArgumentError& error) {
    if (provided == MPI_THREAD_MULTIPLE ||
        std::strstr(error.what(), "needs MPI_THREAD_MULTIPLE") == nullptr ||
        std::strstr(error.what(), "all_reduce") == nullptr) {
      fail(std::string("unexpected refusal of all_reduce_async: ") + error.what());
    }
  }
  if (provided == MPI_THREAD_MULTIPLE && sum != comm.size()) {
    fail("all_reduce_async: expected " + std::to_string(comm.size()) + ", got " +
         std::to_string(sum));
  }
  sum = 0;
  comm.all_reduce(&one, &sum, 1, DataType::kInt32);
  if (sum != comm.size()) {
    fail("all_reduce after the refusal: expected " + std::to_string(comm.size()) + ", got " +
         std::to_string(sum));
  }
}

int level_of(const std::string& mode) {
  if (mode == "multiple") return MPI_THREAD_MULTIPLE;
  if (mode == "serialized") return MPI_THREAD_SERIALIZED;
  if (mode == "funneled") return MPI_THREAD_FUNNELED;
  std::fprintf(stderr, "unknown --init %s\n", mode.c_str());
  std::exit(2);
}

int run(const std::string& mode, int threads, std::size_t calls, const std::string& only) {
  const Communicator world = mode == "environment"
                                 ? Communicator::world()
                                 : Communicator::from_mpi(MPI_Comm_c2f(MPI_COMM_WORLD));
  async_refused_below_multiple(world);
  if (mode == "funneled") {
    funneled_rule(world);
  } else {
    run_side_by_side(world, threads, calls, only);
    make_in_threads(mode, world, threads, std::max<std::size_t>(1, calls / 4), only);
    int provided = 0;
    MPI_Query_thread(&provided);
    split_side_by_side(world, threads, provided == MPI_THREAD_MULTIPLE);
  }
  int local = g_failures.load();
  int total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) {
    int provided = 0;
    MPI_Query_thread(&provided);
    std::printf(
        "%s (thread level %d), %d ranks, %d threads, %zu calls per algorithm, rank 0 "
        "checked %ld calls, %d of its splits refused: %s\n",
        mode.c_str(), provided, g_size, threads, calls, g_calls.load(), g_refused.load(),
        total == 0 ? "all results exact" : "FAILED");
  }
  return total == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = "environment";
  int threads = 3;
  std::size_t calls = 200;
  std::string only;  // --algorithm: this one alone
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--init") {
      mode = argv[i + 1];
    } else if (flag == "--threads") {
      threads = std::atoi(argv[i + 1]);
    } else if (flag == "--algorithm") {
      only = argv[i + 1];
    } else if (flag == "--calls") {
      calls = static_cast<std::size_t>(std::atoll(argv[i + 1]));
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  int status = 0;
  if (mode == "environment") {
    Environment environment(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    status = run(mode, threads, calls, only);
  } else {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, level_of(mode), &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    // FUNNELED's rule applies only where MPI gives FUNNELED itself.
    if (provided < level_of(mode) || (mode == "funneled" && provided != MPI_THREAD_FUNNELED)) {
      if (g_rank == 0) std::printf("MPI provides thread level %d only: skipped\n", provided);
      MPI_Finalize();
      return 77;
    }
    status = run(mode, threads, calls, only);
    MPI_Finalize();
  }
  return status;
}
