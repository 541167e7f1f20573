// The `_async` collectives (collective/work.h) with real processes: every
// collective started many at a time and waited in reverse order, exact in
// every element; calls in flight mixed with blocking calls on the same
// communicator and with calls on a second one; progress while the caller
// only computes; wait(timeout) expiring; a destroyed unfinished Work whose
// call still completes; argument errors at the start with the blocking
// call's text; a mismatch raised by wait() on every rank; abort with a call
// in flight. The order between ranks is forced by a second communicator,
// never by a sleep, so that load cannot change an outcome.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "collective/collective.h"
#include "collective_case.h"
#include "per_rank_counts.h"
#include "value_pattern.h"

namespace {

using namespace std::chrono_literals;
using collective::AllReduceOptions;
using collective::CollectiveKind;
using collective::Communicator;
using collective::DataType;
using collective::ReduceOp;
using collective::Work;
namespace cases = collective::cases;

Communicator& world() {
  static Communicator comm = Communicator::world();
  return comm;
}

// A second communicator of the same ranks: the test's own signals between
// ranks, in an order no call on world() can disturb.
Communicator& side() {
  static Communicator comm = world().split(0, world().rank());
  return comm;
}

// The `_async` form of what cases::CollectiveCase::run calls.
Work start(Communicator& comm, CollectiveKind kind, const cases::CallArgs& args) {
  const std::size_t own = cases::count_of(args.shape(), args.count, args.rank);
  switch (kind) {
    case CollectiveKind::kAllReduce: {
      collective::AllReduceOptions options;
      options.op = args.op;
      return comm.all_reduce_async(args.send, args.recv, args.count, args.type, options);
    }
    case CollectiveKind::kReduceScatter: {
      collective::ReduceScatterOptions options;
      options.op = args.op;
      return comm.reduce_scatter_async(args.send, args.recv, args.count, args.type, options);
    }
    case CollectiveKind::kAllGather:
      return comm.all_gather_async(args.send, args.recv, args.count, args.type);
    case CollectiveKind::kBroadcast: {
      collective::BroadcastOptions options;
      options.root = args.root;
      return comm.broadcast_async(args.recv, args.count, args.type, options);
    }
    case CollectiveKind::kReduce: {
      collective::ReduceOptions options;
      options.op = args.op;
      options.root = args.root;
      return comm.reduce_async(args.send, args.recv, args.count, args.type, options);
    }
    case CollectiveKind::kBarrier: return comm.barrier_async();
    case CollectiveKind::kAllToAll:
      return comm.all_to_all_async(args.send, args.recv, args.count, args.type);
    case CollectiveKind::kAllToAllV:
      return comm.all_to_all_v_async(args.send, args.send_counts, args.send_displacements,
                                     args.recv, args.recv_counts, args.recv_displacements,
                                     args.type);
    case CollectiveKind::kAllGatherV:
      return comm.all_gather_v_async(args.send, own, args.recv, args.recv_counts,
                                     args.recv_displacements, args.type);
    case CollectiveKind::kReduceScatterV: {
      collective::ReduceScatterOptions options;
      options.op = args.op;
      return comm.reduce_scatter_v_async(args.send, args.recv, args.recv_counts, args.type,
                                         options);
    }
    case CollectiveKind::kGather: {
      collective::GatherOptions options;
      options.root = args.root;
      return comm.gather_async(args.send, args.recv, args.count, args.type, options);
    }
    case CollectiveKind::kGatherV: {
      collective::GatherOptions options;
      options.root = args.root;
      return comm.gather_v_async(args.send, own, args.recv, args.recv_counts,
                                 args.recv_displacements, args.type, options);
    }
    case CollectiveKind::kScatter: {
      collective::ScatterOptions options;
      options.root = args.root;
      return comm.scatter_async(args.send, args.recv, args.count, args.type, options);
    }
    case CollectiveKind::kScatterV: {
      collective::ScatterOptions options;
      options.root = args.root;
      return comm.scatter_v_async(args.send, args.send_counts, args.send_displacements, args.recv,
                                  own, args.type, options);
    }
  }
  ADD_FAILURE() << "no _async call for kind " << static_cast<int>(kind);
  return Work();
}

// One call's buffers, arguments and handle, alive until it was checked.
struct InFlight {
  std::unique_ptr<cases::CollectiveCase> c;
  std::vector<std::byte> send;
  std::vector<std::byte> recv;
  cases::CallArgs args;
  Work work;
  std::string what;
};

std::unique_ptr<InFlight> prepare(CollectiveKind kind, std::size_t count, DataType type,
                                  bool in_place, int root, std::size_t uneven) {
  auto call = std::make_unique<InFlight>();
  call->c = cases::make_collective_case(kind);
  Communicator& comm = world();
  const std::size_t element = collective::element_size(type);
  const cases::Shape shape{comm.size(), comm.rank(), uneven};
  const cases::Geometry geometry = call->c->geometry(count, element, shape);
  call->send.resize(geometry.send_elements * element + 64);
  call->recv.resize(geometry.recv_elements * element + 64);
  cases::CallArgs& args = call->args;
  args.send_base = call->send.data();
  args.recv_base = call->recv.data();
  args.count = count;
  args.type = type;
  args.op = ReduceOp::kSum;
  args.root = root;
  args.in_place = in_place;
  args.rank = comm.rank();
  args.ranks = comm.size();
  args.uneven = uneven;
  call->c->place(args);
  cases::fill_sentinel(type, cases::Region{call->recv.data(), geometry.recv_elements, 0});
  for (const cases::Region& input : call->c->inputs(args)) {
    cases::fill_inputs(call->c->pattern(args), args.rank, input);
  }
  call->what = std::string(call->c->name()) + " count " + std::to_string(count) + " " +
               std::string(collective::to_string(type)) + (in_place ? " in place" : "") + " root " +
               std::to_string(root) + " uneven " + std::to_string(uneven);
  return call;
}

void expect_exact(const InFlight& call) {
  const cases::WrongElements wrong = call.c->check(call.args);
  EXPECT_EQ(wrong.count, 0u) << call.what << ": " << cases::describe_wrong(wrong, call.args.rank);
}

// Every collective, out of place and in place, three counts and two types,
// all started before any is waited for, then waited last first.
TEST(Async, EveryCollectiveManyInFlightWaitedInReverse) {
  Communicator& comm = world();
  const int root = comm.size() - 1;
  std::vector<std::unique_ptr<InFlight>> calls;
  for (const CollectiveKind kind : cases::kinds_with_cases()) {
    const auto c = cases::make_collective_case(kind);
    const std::size_t uneven = c->per_rank_counts() ? 4 : 1;
    for (const std::size_t count : {std::size_t{0}, std::size_t{7}, std::size_t{70001}}) {
      for (const DataType type : {DataType::kFloat32, DataType::kInt64}) {
        for (const bool in_place : {false, true}) {
          if (in_place ? !c->has_in_place() : !c->has_out_of_place()) continue;
          calls.push_back(prepare(kind, count, type, in_place, root, uneven));
          calls.back()->work = start(comm, kind, calls.back()->args);
        }
      }
    }
  }
  calls.push_back(std::make_unique<InFlight>());
  calls.back()->work = comm.barrier_async();
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    InFlight& call = **it;
    ASSERT_NO_THROW(call.work.wait()) << call.what;
    EXPECT_TRUE(call.work.is_completed());
    EXPECT_TRUE(call.work.test());
    if (call.c) expect_exact(call);
  }
}

// The value of element i of all-reduce number `call` on `rank`, and the sum
// over ranks: exact in int64.
std::int64_t input_of(int rank, std::size_t i, int call) {
  return static_cast<std::int64_t>(rank + 1) * static_cast<std::int64_t>(i % 1000 + 1) + call;
}
std::int64_t sum_of(int ranks, std::size_t i, int call) {
  const std::int64_t rank_sum = static_cast<std::int64_t>(ranks) * (ranks + 1) / 2;
  return rank_sum * static_cast<std::int64_t>(i % 1000 + 1) +
         static_cast<std::int64_t>(ranks) * call;
}

struct Reduction {
  std::vector<std::int64_t> send;
  std::vector<std::int64_t> recv;
  Work work;
};

void fill_reduction(Reduction& r, std::size_t count, int rank, int call) {
  r.send.resize(count);
  r.recv.assign(count, -1);
  for (std::size_t i = 0; i < count; ++i) r.send[i] = input_of(rank, i, call);
}

void expect_sum(const std::vector<std::int64_t>& recv, int ranks, int rank, int call) {
  for (std::size_t i = 0; i < recv.size(); ++i) {
    ASSERT_EQ(recv[i], sum_of(ranks, i, call))
        << "rank " << rank << " call " << call << " index " << i << " of " << recv.size();
  }
}

// Eight all-reduces of different sizes in flight on one communicator,
// blocking calls on it between the starts (they wait their turn), calls on
// a second communicator meanwhile (blocking and started), waited in reverse.
TEST(Async, EightAllReducesMixedWithBlockingAndASecondCommunicator) {
  Communicator& comm = world();
  Communicator& other = side();
  const int rank = comm.rank();
  const int ranks = comm.size();
  const std::size_t sizes[8] = {1, 3, 100, 1000, 4099, 65537, 262147, 8};
  Reduction calls[8];
  Reduction blocking;
  Reduction on_other[2];
  for (int c = 0; c < 8; ++c) {
    fill_reduction(calls[c], sizes[c], rank, c);
    calls[c].work = comm.all_reduce_async(calls[c].send.data(), calls[c].recv.data(), sizes[c],
                                          DataType::kInt64);
    if (c == 2) {
      fill_reduction(blocking, 5000, rank, 100);
      comm.all_reduce(blocking.send.data(), blocking.recv.data(), 5000, DataType::kInt64);
      // The blocking call ran after the three before it, in program order.
      for (int done = 0; done <= 2; ++done) EXPECT_TRUE(calls[done].work.is_completed());
      expect_sum(blocking.recv, ranks, rank, 100);
    }
    if (c == 4) {
      fill_reduction(on_other[0], 777, rank, 200);
      on_other[0].work = other.all_reduce_async(on_other[0].send.data(), on_other[0].recv.data(),
                                                777, DataType::kInt64);
      fill_reduction(on_other[1], 33, rank, 201);
      other.all_reduce(on_other[1].send.data(), on_other[1].recv.data(), 33, DataType::kInt64);
      expect_sum(on_other[1].recv, ranks, rank, 201);
    }
  }
  for (int c = 7; c >= 0; --c) {
    calls[c].work.wait();
    expect_sum(calls[c].recv, ranks, rank, c);
  }
  on_other[0].work.wait();
  expect_sum(on_other[0].recv, ranks, rank, 200);
  EXPECT_EQ(comm.sequence_number(), comm.sequence_number());  // no call left behind
}

// The call completes while the caller only computes: it never enters MPI
// nor any call of the library but the handle's is_completed(), which only
// reads the handle. The bound is generous (a loaded machine): it only
// catches a call that never completes on its own.
TEST(Async, CompletesWhileTheCallerComputes) {
  Communicator& comm = world();
  Reduction r;
  fill_reduction(r, 1, comm.rank(), 7);
  Work work = comm.all_reduce_async(r.send.data(), r.recv.data(), 1, DataType::kInt64);
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  volatile double sink = 1.0;
  bool completed = false;
  while (!completed && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 100000; ++i) sink = sink * 1.0000001 + 1e-9;
    completed = work.is_completed();
  }
  ASSERT_TRUE(completed) << "rank " << comm.rank()
                         << ": an 8-byte all_reduce_async did not complete within 120 s while "
                            "the caller computed";
  EXPECT_TRUE(work.test());
  expect_sum(r.recv, comm.size(), comm.rank(), 7);
}

// Rank 0 starts a call the others make only after rank 0 tells them so on
// the second communicator: until then it cannot complete.
TEST(Async, WaitWithTimeoutExpiresAndTheCallGoesOn) {
  Communicator& comm = world();
  Communicator& other = side();
  if (comm.size() == 1) GTEST_SKIP() << "needs a peer that has not called yet";
  Reduction r;
  fill_reduction(r, 1000, comm.rank(), 3);
  if (comm.rank() == 0) {
    Work work = comm.all_reduce_async(r.send.data(), r.recv.data(), 1000, DataType::kInt64);
    EXPECT_FALSE(work.wait(10ms)) << "rank 0: the call finished before its peers made it";
    EXPECT_FALSE(work.is_completed());
    EXPECT_FALSE(work.test());
    other.barrier();  // now the others call
    EXPECT_TRUE(work.wait(std::chrono::milliseconds::max()));
  } else {
    other.barrier();
    comm.all_reduce(r.send.data(), r.recv.data(), 1000, DataType::kInt64);
  }
  expect_sum(r.recv, comm.size(), comm.rank(), 3);
}

// Work::on_completion (what the MPI drop-in completes its requests with):
// the callback runs once, after the call wrote its result, on the progress
// thread while the call was in flight; at once, on the caller's thread,
// when it had finished; at once for a default Work.
TEST(Async, OnCompletionRunsOnceAfterTheCallFinished) {
  Communicator& comm = world();
  Communicator& other = side();
  const int rank = comm.rank();
  Reduction r;
  fill_reduction(r, 1000, rank, 5);
  std::atomic<int> runs{0};
  std::atomic<std::int64_t> last_seen{-1};
  std::atomic<bool> on_caller_thread{false};
  const std::thread::id caller = std::this_thread::get_id();
  const auto record = [&] {
    last_seen = r.recv.back();
    on_caller_thread = std::this_thread::get_id() == caller;
    ++runs;
  };
  if (rank == 0 && comm.size() > 1) {
    Work work = comm.all_reduce_async(r.send.data(), r.recv.data(), 1000, DataType::kInt64);
    work.on_completion(record);
    EXPECT_FALSE(work.wait(10ms)) << "rank 0: the call finished before its peers made it";
    EXPECT_EQ(runs.load(), 0) << "rank 0: the callback ran while the call was in flight";
    other.barrier();  // now the others call
    work.wait();
    EXPECT_FALSE(on_caller_thread.load()) << "rank 0: ran on the caller's thread, not the call's";
  } else {
    if (comm.size() > 1) other.barrier();
    Work work = comm.all_reduce_async(r.send.data(), r.recv.data(), 1000, DataType::kInt64);
    work.wait();
    work.on_completion(record);
    EXPECT_TRUE(on_caller_thread.load()) << "rank " << rank << ": a finished call's callback "
                                         << "did not run at once on the caller's thread";
  }
  EXPECT_EQ(runs.load(), 1) << "rank " << rank << ": the callback ran " << runs.load() << " times";
  EXPECT_EQ(last_seen.load(), sum_of(comm.size(), 999, 5))
      << "rank " << rank << ": the callback saw index 999 before the call wrote it";
  expect_sum(r.recv, comm.size(), rank, 5);
  int default_runs = 0;
  Work().on_completion([&] { ++default_runs; });
  EXPECT_EQ(default_runs, 1) << "rank " << rank << ": a default Work's callback did not run";
}

// A Work destroyed before its call finished: the call still completes in
// program order and writes its buffer; the v-form's counts, reused at once,
// were copied.
TEST(Async, DestroyedUnfinishedWorkStillCompletes) {
  Communicator& comm = world();
  Communicator& other = side();
  const int ranks = comm.size();
  Reduction r;
  fill_reduction(r, 4096, comm.rank(), 11);
  std::vector<std::int64_t> gathered(static_cast<std::size_t>(ranks) * 3, -1);
  std::vector<std::int64_t> mine(3);
  for (int i = 0; i < 3; ++i) mine[static_cast<std::size_t>(i)] = comm.rank() * 10 + i;
  if (comm.rank() == 0) {
    {
      Work dropped = comm.all_reduce_async(r.send.data(), r.recv.data(), 4096, DataType::kInt64);
      std::vector<std::size_t> counts(static_cast<std::size_t>(ranks), 3);
      std::vector<std::size_t> displacements(static_cast<std::size_t>(ranks));
      for (int q = 0; q < ranks; ++q) displacements[static_cast<std::size_t>(q)] = 3 * q;
      (void)comm.all_gather_v_async(mine.data(), 3, gathered.data(), counts, displacements,
                                    DataType::kInt64);
      std::fill(counts.begin(), counts.end(), 0);  // the call kept its own copy
      std::fill(displacements.begin(), displacements.end(), 999);
    }
    other.barrier();
  } else {
    other.barrier();
    comm.all_reduce(r.send.data(), r.recv.data(), 4096, DataType::kInt64);
    std::vector<std::size_t> counts(static_cast<std::size_t>(ranks), 3);
    std::vector<std::size_t> displacements(static_cast<std::size_t>(ranks));
    for (int q = 0; q < ranks; ++q) displacements[static_cast<std::size_t>(q)] = 3 * q;
    comm.all_gather_v(mine.data(), 3, gathered.data(), counts, displacements, DataType::kInt64);
  }
  comm.barrier();  // waits its turn behind the dropped calls
  expect_sum(r.recv, ranks, comm.rank(), 11);
  for (int q = 0; q < ranks; ++q) {
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(gathered[static_cast<std::size_t>(3 * q + i)], q * 10 + i)
          << "rank " << comm.rank() << " index " << 3 * q + i;
    }
  }
}

std::string without_sequence(const std::string& text) {
  return std::regex_replace(text, std::regex("#[0-9]+"), "#N");
}

// A bad argument on every rank: the _async call raises it at once, the
// blocking call's type and text, and the communicator stays usable.
TEST(Async, ArgumentErrorsAreRaisedByTheStartWithTheBlockingText) {
  Communicator& comm = world();
  std::vector<std::int64_t> recv(4);
  std::string blocking_text;
  try {
    comm.all_reduce(nullptr, recv.data(), 4, DataType::kInt64);
    ADD_FAILURE() << "rank " << comm.rank() << ": blocking call with a null send accepted";
  } catch (const collective::InvalidArgumentError& error) {
    blocking_text = error.what();
  }
  std::string async_text;
  try {
    (void)comm.all_reduce_async(nullptr, recv.data(), 4, DataType::kInt64);
    ADD_FAILURE() << "rank " << comm.rank() << ": _async call with a null send accepted";
  } catch (const collective::InvalidArgumentError& error) {
    async_text = error.what();
  }
  EXPECT_FALSE(async_text.empty());
  EXPECT_EQ(without_sequence(async_text), without_sequence(blocking_text))
      << "rank " << comm.rank();
  Reduction r;
  fill_reduction(r, 9, comm.rank(), 5);
  comm.all_reduce_async(r.send.data(), r.recv.data(), 9, DataType::kInt64).wait();
  expect_sum(r.recv, comm.size(), comm.rank(), 5);
}

// Ranks disagree on the count: every rank's wait() raises MismatchError,
// as every rank's blocking call would, and the communicator stays usable.
TEST(Async, MismatchIsRaisedByWaitOnEveryRank) {
  Communicator& comm = world();
  if (comm.size() == 1) GTEST_SKIP() << "a mismatch needs two ranks";
  const std::size_t count = comm.rank() == 0 ? 8 : 9;
  std::vector<std::int64_t> send(9, 1);
  std::vector<std::int64_t> recv(9, -1);
  Work work = comm.all_reduce_async(send.data(), recv.data(), count, DataType::kInt64);
  try {
    work.wait();
    ADD_FAILURE() << "rank " << comm.rank() << ": mismatched counts accepted";
  } catch (const collective::MismatchError& error) {
    EXPECT_NE(std::string(error.what()).find("all_reduce"), std::string::npos) << error.what();
  }
  EXPECT_THROW(work.test(), collective::MismatchError);  // the same error again
  EXPECT_TRUE(work.is_completed());
  for (std::size_t i = 0; i < recv.size(); ++i) {
    ASSERT_EQ(recv[i], -1) << "rank " << comm.rank() << " index " << i << " was touched";
  }
  Reduction r;
  fill_reduction(r, 9, comm.rank(), 6);
  comm.all_reduce(r.send.data(), r.recv.data(), 9, DataType::kInt64);
  expect_sum(r.recv, comm.size(), comm.rank(), 6);
}

// abort() with a call in flight that cannot finish (its peers have not
// called): wait() raises the abort's CommunicationError within a bound; the
// communicator refuses later calls; the others never use it again.
TEST(Async, AbortWithACallInFlight) {
  Communicator& parent = world();
  if (parent.size() == 1) GTEST_SKIP() << "needs a peer that never calls";
  Communicator comm = parent.split(0, parent.rank());
  if (parent.rank() == 0) {
    std::vector<std::int64_t> send(1, 1);
    std::vector<std::int64_t> recv(1, -1);
    Work work = comm.all_reduce_async(send.data(), recv.data(), 1, DataType::kInt64);
    EXPECT_FALSE(work.wait(20ms));
    comm.abort("the test aborts with a call in flight");
    try {
      EXPECT_TRUE(work.wait(60s)) << "rank 0: the aborted call did not end within 60 s";
      ADD_FAILURE() << "rank 0: an aborted call succeeded";
    } catch (const collective::CommunicationError& error) {
      EXPECT_NE(std::string(error.what()).find("aborted by Communicator::abort"), std::string::npos)
          << error.what();
    }
    EXPECT_THROW(comm.barrier_async(), collective::CommunicationError);
    EXPECT_EQ(recv[0], -1);
  }
  side().barrier();
}

}  // namespace
