// The process that fault_driver.py starts under mpirun and then harms
// (SIGKILL, SIGSTOP, ...). Not a test by itself: it prints what happened,
// one line per event, for the driver to check:
//   READY rank=<r> pid=<pid>
//   PROGRESS rank=<r> calls=<n>
//   ERROR rank=<r> class=<TimeoutError|CommunicationError|...> at=<unix s> calls=<n>
//         [failed=<dead ranks>] what=<message>     (failed= for PeerFailedError)
//   AGAIN rank=<r> class=<...> seconds=<s> untouched=<0|1> [failed=<ranks>] what=<message>
//         (after a PeerFailedError: the next all_reduce's outcome)
//   DONE rank=<r> calls=<n>
// After an error a rank waits 1.5 s, so that the other survivors report
// too, and leaves with _exit(3): MPI_Finalize can block on a dead peer
// (docs/errors.md).
//
//   collective_fault_worker <scenario> <victim rank> [seconds] [algorithm]
// scenarios:
//   loop         every rank all-reduces until rank 0 has run `seconds`
//   never_call   the victim never makes the first collective
//   never_world  the victim never creates the communicator
//   exit_abrupt  the victim leaves with _exit(0) after 20 calls
//   exit_clean   the victim returns from main (MPI_Finalize) after 20 calls
//   loop_async   as loop, each step 4 all_reduce_async in flight, waited in
//                reverse (a failure comes from Work::wait)
//   outstanding_at_exit  8 all_reduce_async left in flight (handles dropped)
//                when main returns: Environment's destructor finishes them;
//                an exit handler checks every element (EXACT or WRONG)
//   loop_all_to_all  as loop, with all_to_all calls of 1 KiB blocks
//   loop_all_to_all_large  the same with 128 KiB blocks (shared_memory
//                reads them from the peers by cross-memory attach)
//   loop_allocated  as loop, with every rank's input in a buffer from
//                Communicator::allocate (an object in /dev/shm), and an
//                8 MiB allocation held beside it
//   loop_return  as loop, but a rank that fails returns from main (printing
//                RETURNING) instead of _exit(3): Environment's destructor
//                must end the process within a bound
//   loop_all_to_all  as loop, with all_to_all of 16 int32 per block in the
//                algorithm named (rank 0's decision to stop travels in an
//                all_to_all too, so every call is one)
//   skip_call    30 calls alternating all_reduce and broadcast; the victim
//                skips call #20 (the ranks then disagree at #20)
//   skip_call_async  as skip_call with the calls in flight: batches of 4
//                all_reduce_async/broadcast_async, waited in program
//                order; the victim skips call #20, so each rank's
//                MismatchError comes from Work::wait
//   two_comms    two communicators; after 4 calls on each, the victim calls
//                the second one first, the others the first one
// The flight-recorder scenarios write their dumps where
// COLLECTIVE_FLIGHT_RECORDER_DIR says (fault_driver.py, collective_trace);
// after an error their ranks wait 1.5 s before leaving, so that every rank's
// timeout dumps before mpirun ends the job.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "collective/collective.h"

namespace {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

const char* class_of(const collective::Error& error) {
  if (dynamic_cast<const collective::PeerFailedError*>(&error)) return "PeerFailedError";
  if (dynamic_cast<const collective::TimeoutError*>(&error)) return "TimeoutError";
  if (dynamic_cast<const collective::CommunicationError*>(&error)) return "CommunicationError";
  if (dynamic_cast<const collective::MismatchError*>(&error)) return "MismatchError";
  if (dynamic_cast<const collective::InvalidArgumentError*>(&error)) return "InvalidArgumentError";
  return "Error";
}

// "failed=1,2 " for a PeerFailedError (its dead ranks), else "".
std::string failed_field(const collective::Error& error) {
  const auto* peer_failure = dynamic_cast<const collective::PeerFailedError*>(&error);
  if (peer_failure == nullptr) return "";
  std::string text = "failed=";
  for (std::size_t i = 0; i < peer_failure->failed_ranks().size(); ++i) {
    text += (i == 0 ? "" : ",") + std::to_string(peer_failure->failed_ranks()[i]);
  }
  return text + " ";
}

void report_error(int rank, long calls, const collective::Error& error) {
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%.3f", unix_seconds());
  say("ERROR rank=" + std::to_string(rank) + " class=" + class_of(error) + " at=" + stamp +
      " calls=" + std::to_string(calls) + " " + failed_field(error) + "what=" + error.what());
}

// After a PeerFailedError the communicator stays failed: the next call
// raises it again at once, naming the same ranks, and touches no buffer.
//   AGAIN rank=<r> class=<...> seconds=<s> untouched=<0|1> failed=<ranks> what=<message>
void call_again_after_peer_failure(int rank, collective::Communicator& comm) {
  std::vector<float> values(1024, 7.0f);
  const auto start = std::chrono::steady_clock::now();
  std::string outcome = "class=none";
  try {
    comm.all_reduce(std::span<float>(values));
  } catch (const collective::Error& again) {
    outcome = std::string("class=") + class_of(again);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bool untouched = true;
    for (const float value : values) untouched = untouched && value == 7.0f;
    outcome += " seconds=" + std::to_string(seconds) + " untouched=" + (untouched ? "1" : "0") +
               " " + failed_field(again) + "what=" + again.what();
  }
  say("AGAIN rank=" + std::to_string(rank) + " " + outcome);
}

[[noreturn]] void sleep_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// One all_to_all of `block` floats a block, the first element of every
// block checked.
void all_to_all_once(collective::Communicator& comm, collective::Algorithm algorithm,
                     std::size_t block) {
  const auto ranks = static_cast<std::size_t>(comm.size());
  std::vector<float> send(ranks * block), recv(ranks * block, -1.0f);
  for (std::size_t i = 0; i < send.size(); ++i) {
    send[i] = static_cast<float>(comm.rank() * 100000 + static_cast<int>(i));
  }
  collective::AllToAllOptions options;
  options.algorithm = algorithm;
  comm.all_to_all(send.data(), recv.data(), block, collective::DataType::kFloat32, options);
  for (std::size_t q = 0; q < ranks; ++q) {
    const float expected =
        static_cast<float>(static_cast<int>(q) * 100000 + comm.rank() * static_cast<int>(block));
    if (recv[q * block] != expected) {
      say("WRONG rank=" + std::to_string(comm.rank()) + " from=" + std::to_string(q) +
          " value=" + std::to_string(recv[q * block]));
      std::_Exit(4);
    }
  }
}

// Four all-reduces in flight (all_reduce_async), a little computing, then
// waited in reverse: a failure comes from wait(). Every element checked.
void async_batch(collective::Communicator& comm, const collective::AllReduceOptions& options) {
  constexpr int kCalls = 4;
  constexpr std::size_t kCount = 1024;
  std::vector<float> buffers[kCalls];
  collective::Work works[kCalls];
  for (int k = 0; k < kCalls; ++k) {
    buffers[k].assign(kCount, static_cast<float>(comm.rank() + k));
    works[k] = comm.all_reduce_async(buffers[k].data(), buffers[k].data(), kCount,
                                     collective::DataType::kFloat32, options);
  }
  volatile double sink = 1.0;
  for (int i = 0; i < 2000; ++i) sink = sink * 1.0000001 + 1e-9;
  const int size = comm.size();
  // Every call is waited for; the error reported is the first call's in
  // program order (the later ones then name it as the earlier failure).
  std::exception_ptr errors[kCalls];
  for (int k = kCalls - 1; k >= 0; --k) {
    try {
      works[k].wait();
    } catch (const collective::Error&) {
      errors[k] = std::current_exception();
    }
  }
  for (int k = 0; k < kCalls; ++k) {
    if (errors[k]) std::rethrow_exception(errors[k]);
  }
  for (int k = kCalls - 1; k >= 0; --k) {
    const auto expected = static_cast<float>(size * (size - 1) / 2 + size * k);
    for (std::size_t i = 0; i < kCount; ++i) {
      if (buffers[k][i] != expected) {
        say("WRONG rank=" + std::to_string(comm.rank()) + " call=" + std::to_string(k) +
            " index=" + std::to_string(i) + " expected=" + std::to_string(expected) +
            " value=" + std::to_string(buffers[k][i]));
        std::_Exit(4);
      }
    }
  }
}

// skip_call_async: 32 calls alternating all_reduce_async and
// broadcast_async, 4 in flight at a time, waited in program order; the
// victim skips call #20. The first error in program order is reported.
// A batch that completes is checked
// element by element.
void skip_call_async(collective::Communicator& comm, bool is_victim, long& calls) {
  constexpr int kBatch = 4;
  constexpr std::size_t kReduceCount = 1024, kBroadcastCount = 16;
  const int rank = comm.rank(), size = comm.size();
  for (int first = 0; first < 32; first += kBatch) {
    std::vector<float> reduced[kBatch];
    std::vector<std::int32_t> broadcast[kBatch];
    collective::Work works[kBatch];
    for (int k = 0; k < kBatch; ++k) {
      const int call = first + k;
      if (is_victim && call == 20) continue;
      if (call % 2 == 0) {
        reduced[k].assign(kReduceCount, static_cast<float>(rank + call));
        works[k] = comm.all_reduce_async(reduced[k].data(), reduced[k].data(), kReduceCount,
                                         collective::DataType::kFloat32);
      } else {
        broadcast[k].assign(kBroadcastCount, rank == 0 ? call : -1);
        works[k] = comm.broadcast_async(broadcast[k].data(), kBroadcastCount,
                                        collective::DataType::kInt32);
      }
    }
    // Waited in program order; the first failure is reported at once (the
    // calls behind it would wait for calls the victim makes no more).
    for (int k = 0; k < kBatch; ++k) {
      if (is_victim && first + k == 20) continue;  // never issued
      works[k].wait();
      ++calls;
    }
    for (int k = 0; k < kBatch; ++k) {
      const int call = first + k;
      if (is_victim && call == 20) continue;
      if (call % 2 == 0) {
        const auto expected = static_cast<float>(size * (size - 1) / 2 + size * call);
        for (std::size_t i = 0; i < kReduceCount; ++i) {
          if (reduced[k][i] != expected) {
            say("WRONG rank=" + std::to_string(rank) + " call=" + std::to_string(call) +
                " index=" + std::to_string(i) + " expected=" + std::to_string(expected) +
                " value=" + std::to_string(reduced[k][i]));
            std::_Exit(4);
          }
        }
      } else {
        for (std::size_t i = 0; i < kBroadcastCount; ++i) {
          if (broadcast[k][i] != call) {
            say("WRONG rank=" + std::to_string(rank) + " call=" + std::to_string(call) +
                " index=" + std::to_string(i) + " expected=" + std::to_string(call) +
                " value=" + std::to_string(broadcast[k][i]));
            std::_Exit(4);
          }
        }
      }
    }
  }
}

// abort_in_flight: every rank but the victim issues 4 all_reduce_async,
// the victim none; 300 ms later each aborts its communicator. The first
// call ends aborted (and writes the flight record, the three behind it
// still queued); the queued ones are refused; every wait() raises.
void abort_in_flight(collective::Communicator& comm, bool is_victim, int world_rank) {
  constexpr int kInFlight = 4;
  if (!is_victim) {
    std::vector<float> buffers[kInFlight];
    collective::Work works[kInFlight];
    for (int k = 0; k < kInFlight; ++k) {
      buffers[k].assign(1024, 1.0f);
      works[k] = comm.all_reduce_async(buffers[k].data(), buffers[k].data(), buffers[k].size(),
                                       collective::DataType::kFloat32);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    comm.abort("abort_in_flight");
    int failed = 0;
    for (int k = 0; k < kInFlight; ++k) {
      try {
        works[k].wait();
      } catch (const collective::Error& error) {
        if (k == 0) report_error(world_rank, 0, error);
        ++failed;
      }
    }
    if (failed != kInFlight) {
      say("WRONG rank=" + std::to_string(world_rank) + " failed=" + std::to_string(failed) +
          " expected=" + std::to_string(kInFlight));
    }
  }
  // Every rank has printed before any leaves (mpirun ends the others then).
  MPI_Barrier(MPI_COMM_WORLD);
  std::_Exit(0);
}

// outstanding_at_exit: calls left in flight when main returns. The
// communicator and the buffers are static, so they outlive Environment,
// whose destructor must finish the calls (on every rank, so that each
// rank's calls find their peers) before MPI_Finalize; an exit handler then
// checks every element.
constexpr int kOutstanding = 8;
constexpr std::size_t kOutstandingCount = 4099;
std::vector<std::int64_t> g_outstanding[kOutstanding];
int g_outstanding_rank = -1;
int g_outstanding_size = 0;

void check_outstanding() {
  const std::int64_t rank_sum =
      static_cast<std::int64_t>(g_outstanding_size) * (g_outstanding_size - 1) / 2;
  for (int k = 0; k < kOutstanding; ++k) {
    for (std::size_t i = 0; i < kOutstandingCount; ++i) {
      const std::int64_t expected =
          rank_sum + static_cast<std::int64_t>(g_outstanding_size) * (k * 10000 + i);
      if (g_outstanding[k][i] != expected) {
        say("WRONG rank=" + std::to_string(g_outstanding_rank) + " call=" + std::to_string(k) +
            " index=" + std::to_string(i) + " expected=" + std::to_string(expected) +
            " value=" + std::to_string(g_outstanding[k][i]));
        std::_Exit(4);
      }
    }
  }
  say("EXACT rank=" + std::to_string(g_outstanding_rank));
}

int outstanding_at_exit() {
  static collective::Communicator comm = collective::Communicator::world();
  g_outstanding_rank = comm.rank();
  g_outstanding_size = comm.size();
  std::atexit(check_outstanding);  // after main's Environment is destroyed
  for (int k = 0; k < kOutstanding; ++k) {
    g_outstanding[k].resize(kOutstandingCount);
    for (std::size_t i = 0; i < kOutstandingCount; ++i) {
      g_outstanding[k][i] = comm.rank() + static_cast<std::int64_t>(k * 10000 + i);
    }
    (void)comm.all_reduce_async(g_outstanding[k].data(), g_outstanding[k].data(), kOutstandingCount,
                                collective::DataType::kInt64);
  }
  say("RETURNING rank=" + std::to_string(comm.rank()) + " with calls in flight");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <scenario> <victim rank> [seconds] [algorithm]\n", argv[0]);
    return 2;
  }
  const std::string scenario = argv[1];
  const int victim = std::atoi(argv[2]);
  const double seconds = argc > 3 ? std::atof(argv[3]) : 10.0;
  collective::AllReduceOptions options;
  if (argc > 4)
    options.algorithm = collective::parse_algorithm(argv[4]).value_or(collective::Algorithm::kAuto);

  collective::Environment environment(argc, argv);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  say("READY rank=" + std::to_string(world_rank) + " pid=" + std::to_string(getpid()));
  const bool is_victim = world_rank == victim;
  if (scenario == "never_world" && is_victim) sleep_forever();
  if (scenario == "outstanding_at_exit") return outstanding_at_exit();

  long calls = 0;
  std::optional<collective::Communicator> kept;  // for a call after the failure
  try {
    auto comm = collective::Communicator::world();
    kept = comm;
    const int rank = comm.rank();
    if (scenario == "never_call" && is_victim) sleep_forever();
    std::vector<float> owned(1024);
    float* data = owned.data();
    if (scenario == "loop_allocated") {
      data = static_cast<float*>(comm.allocate(owned.size() * sizeof(float)));
      // A second, larger buffer held for the whole run, as a program's
      // gradients would be: 8 MiB, every page touched.
      auto* held = static_cast<char*>(comm.allocate(std::size_t{8} << 20));
      for (std::size_t i = 0; i < (std::size_t{8} << 20); i += 4096) held[i] = 1;
    }
    std::span<float> values(data, owned.size());
    if (scenario == "abort_in_flight") abort_in_flight(comm, is_victim, world_rank);
    if (scenario == "skip_call_async") {
      try {
        skip_call_async(comm, is_victim, calls);
      } catch (const collective::Error& error) {
        // Reported before `comm` is destroyed: its destructor finishes the
        // calls still in flight, whose peers the victim never calls, each
        // only at its timeout (docs/errors.md, "Calls in flight").
        report_error(world_rank, calls, error);
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        std::_Exit(3);
      }
      say("DONE rank=" + std::to_string(rank) + " calls=" + std::to_string(calls));
      return 0;
    }
    if (scenario == "skip_call" || scenario == "two_comms") {
      auto other = collective::Communicator::world();
      std::vector<std::int32_t> small(16, rank);
      for (int call = 0; call < 30; ++call) {
        if (scenario == "skip_call") {
          if (is_victim && call == 20) continue;
          if (call % 2 == 0) {
            comm.all_reduce(values.data(), values.data(), values.size(),
                            collective::DataType::kFloat32);
          } else {
            comm.broadcast(std::span<std::int32_t>(small));
          }
        } else {
          const bool swapped = is_victim && call >= 4;
          (swapped ? other : comm).all_reduce(std::span<float>(values));
          (swapped ? comm : other).all_reduce(std::span<float>(values));
        }
        ++calls;
      }
      say("DONE rank=" + std::to_string(rank) + " calls=" + std::to_string(calls));
      return 0;
    }
    const auto start = std::chrono::steady_clock::now();
    if (scenario == "loop_all_to_all") {
      collective::AllToAllOptions forced;
      forced.algorithm = options.algorithm;
      const auto p = static_cast<std::size_t>(comm.size());
      constexpr std::size_t kBlock = 16;
      std::vector<std::int32_t> out(p * kBlock), in(p * kBlock);
      for (;;) {
        for (int i = 0; i < 100; ++i) {
          for (std::size_t k = 0; k < out.size(); ++k) {
            out[k] = static_cast<std::int32_t>(rank * 100000 + k);
          }
          comm.all_to_all(out.data(), in.data(), kBlock, collective::DataType::kInt32, forced);
          ++calls;
          for (std::size_t q = 0; q < p; ++q) {
            const auto expected = static_cast<std::int32_t>(q * 100000 + rank * kBlock);
            if (in[q * kBlock] != expected) {
              say("WRONG rank=" + std::to_string(rank) + " from=" + std::to_string(q) +
                  " value=" + std::to_string(in[q * kBlock]));
              std::_Exit(4);
            }
          }
        }
        if (calls % 1000 == 0) {
          say("PROGRESS rank=" + std::to_string(rank) + " calls=" + std::to_string(calls));
        }
        const std::int32_t mine =
            rank == 0 &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
                seconds;
        std::fill(out.begin(), out.end(), mine);
        comm.all_to_all(out.data(), in.data(), kBlock, collective::DataType::kInt32, forced);
        if (!in[0]) break;  // block 0 is rank 0's
      }
      say("DONE rank=" + std::to_string(rank) + " calls=" + std::to_string(calls));
      return 0;
    }
    for (;;) {
      for (int i = 0; i < 100; ++i) {
        for (std::size_t k = 0; k < values.size(); ++k)
          values[k] = static_cast<float>(rank + k % 7);
        if (scenario == "loop_async") {
          async_batch(comm, options);
          ++calls;
        } else if (scenario == "loop_all_to_all" || scenario == "loop_all_to_all_large") {
          all_to_all_once(comm, options.algorithm, scenario == "loop_all_to_all" ? 256 : 32768);
          ++calls;
        } else {
          comm.all_reduce(values.data(), values.data(), values.size(),
                          collective::DataType::kFloat32, options);
          ++calls;
          const float expected = static_cast<float>(comm.size() * (comm.size() - 1) / 2);
          if (values[0] != expected) {
            say("WRONG rank=" + std::to_string(rank) + " value=" + std::to_string(values[0]));
            std::_Exit(4);
          }
        }
        if ((scenario == "exit_abrupt" || scenario == "exit_clean") && is_victim && calls == 20) {
          say("LEAVING rank=" + std::to_string(rank) + " calls=20");
          if (scenario == "exit_abrupt") std::_Exit(0);
          comm.free();
          return 0;  // Environment's destructor calls MPI_Finalize
        }
      }
      if (calls % 1000 == 0) {
        say("PROGRESS rank=" + std::to_string(rank) + " calls=" + std::to_string(calls));
      }
      // Rank 0 decides when to stop, and everyone learns it together.
      std::int32_t more =
          rank == 0
              ? std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
                    seconds
              : 0;
      comm.all_reduce(&more, &more, 1, collective::DataType::kInt32, [] {
        collective::AllReduceOptions o;
        o.op = collective::ReduceOp::kMax;
        return o;
      }());
      if (!more) break;
    }
    say("DONE rank=" + std::to_string(rank) + " calls=" + std::to_string(calls));
  } catch (const collective::Error& error) {
    report_error(world_rank, calls, error);
    if (kept && dynamic_cast<const collective::PeerFailedError*>(&error) != nullptr) {
      call_again_after_peer_failure(world_rank, *kept);
    }
    if (scenario == "loop_return") {
      say("RETURNING rank=" + std::to_string(world_rank));
      return 3;  // Environment's destructor runs
    }
    // mpirun ends the job when the first rank exits non-zero: a survivor
    // whose own timeout fires milliseconds later would then be killed
    // before it reports (exit_clean failed so in CI) or dumps.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    std::_Exit(3);
  }
  return 0;
}
