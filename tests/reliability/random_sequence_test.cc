// Random programs of mixed calls, every result checked: what a real
// program does and a sweep of one call at a time does not. Each call draws
// its collective, algorithm (AUTO or one that serves it), type, op, size
// (0, one element, and sizes on both sides of the boxes', the slots' and
// the block route's thresholds), root, per-rank counts, placement,
// alignment, buffers (ordinary or Communicator::allocate) and whether it
// is started (`_async`, up to three in flight, waited for in any order);
// between them, point-to-point exchanges along a shift of the ranks, and
// persistent plans made of such calls and started again and again.
// Every call gets inputs of its own (the value pattern shifted by a salt),
// so a result left over from an earlier call, or read from a slot or box
// an earlier call filled, fails the check.
//
// All ranks draw the same program from the seed: COLLECTIVE_TEST_SEED
// (default 1) and COLLECTIVE_TEST_CALLS (default 300); a failure names the
// seed and the call, which COLLECTIVE_TEST_CALLS and the seed replay.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collective/collective.h"
#include "collective_case.h"

namespace collective {
namespace {

using cases::CallArgs;
using cases::CollectiveCase;
using cases::Geometry;
using cases::Region;
using cases::ResultLayout;
using cases::WrongElements;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtoull(value, nullptr, 10) : fallback;
}

// One call of the program, drawn before any runs (choose_algorithm waits
// for the calls in flight, which would order the program differently).
struct Call {
  int index = 0;
  // A point-to-point exchange of args.count elements of args.type: every
  // rank sends to rank + shift and receives from rank - shift (both
  // started, in either order, or the recv started, then a blocking send).
  bool point_to_point = false;
  int shift = 0;
  bool recv_first = false;
  bool blocking_send = false;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  // The collective's parameters (count, type, op, root, algorithm,
  // deterministic, placement, per-rank counts); buffers, rank and ranks are
  // set when it is issued.
  CallArgs args;
  bool started = false;
  bool shared_buffers = false;  // Communicator::allocate
  std::size_t send_shift = 0;   // elements past the buffer's start
  std::size_t recv_shift = 0;
  std::uint64_t salt = 0;  // added to every element index of the pattern
  // Persistent plans: this call's collective made into a plan (kept for
  // the rest of the program), or a start of plan #plan_index with inputs of
  // this call's salt.
  enum class PlanAction { kNone, kCreate, kStart };
  PlanAction plan = PlanAction::kNone;
  std::size_t plan_index = 0;
};

std::string describe(const Call& call, std::uint64_t seed) {
  std::ostringstream out;
  out << "call " << call.index << " of seed " << seed << ": ";
  if (call.plan == Call::PlanAction::kStart) {
    out << "start of plan #" << call.plan_index << " salt " << call.salt;
    return out.str();
  }
  if (call.plan == Call::PlanAction::kCreate) out << "plan of ";
  if (call.point_to_point) {
    out << "send/recv along shift " << call.shift << " " << to_string(call.args.type) << " count "
        << call.args.count << (call.recv_first ? " recv first" : " send first")
        << (call.blocking_send ? ", blocking send" : "") << " salt " << call.salt;
    return out.str();
  }
  const CallArgs& args = call.args;
  out << cases::make_collective_case(call.kind)->name() << " " << to_string(args.algorithm) << " "
      << to_string(args.type);
  if (cases::make_collective_case(call.kind)->reduces()) out << " " << to_string(args.op);
  if (args.deterministic) out << " deterministic";
  out << " count " << args.count << " root " << args.root << " uneven " << args.uneven
      << (args.in_place ? " in place" : " out of place") << (call.started ? " started" : "")
      << (call.shared_buffers ? " allocated buffers" : "") << " shifts " << call.send_shift << "/"
      << call.recv_shift << " salt " << call.salt;
  return out.str();
}

// Bytes of one block (or of the whole buffer, for the collectives whose
// count is the buffer): none, one element, and each side of the
// thresholds (the 4 KiB boxes, the slots' rounds, the 64 KiB block route).
std::size_t draw_bytes(std::mt19937_64& random) {
  const int kind = std::uniform_int_distribution<int>(0, 99)(random);
  auto between = [&](std::size_t low, std::size_t high) {
    return std::uniform_int_distribution<std::size_t>(low, high)(random);
  };
  if (kind < 6) return 0;
  if (kind < 12) return 1;
  if (kind < 35) return between(2, 256);
  if (kind < 55) return between(257, 4300);
  if (kind < 75) return between(4301, 60000);
  if (kind < 95) return between(60000, 300000);
  return between(300000, 1200000);
}

Call draw_call(int index, std::mt19937_64& random, const Communicator& world, std::size_t& plans) {
  auto pick = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(random);
  };
  auto chance = [&](int percent) { return static_cast<int>(pick(100)) < percent; };
  const auto kinds = cases::kinds_with_cases();
  Call call;
  call.index = index;
  // Never a multiple of the pattern's period: every call's inputs differ
  // from the previous one's at every index.
  call.salt = 1 + static_cast<std::uint64_t>(index) % (cases::kValuePeriod - 1);
  const int action = static_cast<int>(pick(100));
  if (action < 12 && plans > 0) {
    call.plan = Call::PlanAction::kStart;
    call.plan_index = pick(plans);
    return call;
  }
  if (world.size() > 1 && action >= 12 && action < 20) {
    call.point_to_point = true;
    call.shift = 1 + static_cast<int>(pick(static_cast<std::size_t>(world.size() - 1)));
    call.recv_first = chance(50);
    call.blocking_send = call.recv_first && chance(50);
    call.args.type = static_cast<DataType>(pick(kNumDataTypes));
    call.args.count = draw_bytes(random) / element_size(call.args.type);
    return call;
  }
  call.kind = kinds[pick(kinds.size())];
  const auto c = cases::make_collective_case(call.kind);
  CallArgs& args = call.args;
  args.type = static_cast<DataType>(pick(kNumDataTypes));
  if (c->reduces()) {
    args.op = static_cast<ReduceOp>(pick(kNumReduceOps));
    // A bitwise op drawn for a floating type becomes one of the others (no extra draw).
    if (!op_applies_to(args.op, args.type)) {
      args.op = static_cast<ReduceOp>(static_cast<int>(args.op) %
                                      static_cast<int>(ReduceOp::kBitwiseAnd));
    }
  }
  const std::size_t element = element_size(args.type);
  const std::size_t bytes = draw_bytes(random);
  args.count = bytes == 0 ? 0 : std::max<std::size_t>(1, bytes / element);
  if (c->per_rank_counts()) {
    const std::size_t uneven[] = {1, 1, 4, 0, 2};
    args.uneven = uneven[pick(std::size(uneven))];
    if (args.uneven > 1) args.count /= args.uneven;  // rank 0's block stays in the same class
  }
  if (c->rooted()) args.root = static_cast<int>(pick(static_cast<std::size_t>(world.size())));
  if (!c->has_out_of_place()) {
    args.in_place = true;
  } else if (c->has_in_place()) {
    args.in_place = chance(30);
  }
  // A named algorithm where one serves the call, else AUTO; deterministic
  // with AUTO only (a named algorithm may not keep it).
  if (chance(50)) {
    const Algorithm named = static_cast<Algorithm>(1 + pick(kNumAlgorithms - 1));
    try {
      world.choose_algorithm(call.kind, args.count, args.type, named);
      args.algorithm = named;
    } catch (const UnsupportedError&) {
    }
  }
  if (args.algorithm == Algorithm::kAuto && c->reduces()) args.deterministic = chance(10);
  call.started = chance(30);
  call.shared_buffers = chance(15);
  call.send_shift = chance(30) ? 1 + pick(3) : 0;
  call.recv_shift = chance(30) ? 1 + pick(3) : 0;
  if (plans < 4 && chance(6)) {
    call.plan = Call::PlanAction::kCreate;
    call.started = false;
    ++plans;
  }
  return call;
}

// A buffer of the call, ordinary or from the communicator's allocator.
class Buffer {
 public:
  Buffer(Communicator& communicator, std::size_t bytes, bool shared)
      : communicator_(communicator), shared_(shared) {
    bytes = bytes + 64;  // room for the shift; never empty
    if (shared_) {
      data_ = static_cast<std::byte*>(communicator_.allocate(bytes));
    } else {
      ordinary_.resize(bytes);
      data_ = ordinary_.data();
    }
  }
  ~Buffer() {
    if (shared_) communicator_.deallocate(data_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::byte* data() { return data_; }

 private:
  Communicator& communicator_;
  bool shared_;
  std::vector<std::byte> ordinary_;
  std::byte* data_ = nullptr;
};

// A collective's case, arguments and buffers: one call's, or a plan's,
// which its starts share.
struct Prepared {
  std::unique_ptr<CollectiveCase> c;
  CallArgs args;
  std::size_t recv_elements = 0;
  std::unique_ptr<Buffer> send;
  std::unique_ptr<Buffer> recv;
};

// A plan of the program and whether a start of it is unchecked.
struct PlanSlot {
  Call made_by;
  std::shared_ptr<Prepared> prepared;
  std::optional<Plan> plan;
  bool in_flight = false;
};

// A call issued and not yet checked.
struct Issued {
  Call call;
  std::shared_ptr<Prepared> prepared;
  PlanSlot* plan = nullptr;  // a plan's start
  std::vector<Work> works;
};

// One program on one communicator: drawn when made, run by run().
class RandomProgram {
 public:
  // `where` names the program in failures (the thread and communicator).
  RandomProgram(Communicator& on, std::uint64_t program_seed, int calls, std::string name_of_it)
      : communicator(on), seed(program_seed), random(program_seed), where(std::move(name_of_it)) {
    std::size_t plans_drawn = 0;
    for (int i = 0; i < calls; ++i) {
      program.push_back(draw_call(i, random, communicator, plans_drawn));
    }
    if (communicator.rank() == 0) {
      std::printf("%s: seed %llu, %d calls: %s, %zu plans\n", where.c_str(),
                  static_cast<unsigned long long>(seed), calls, summary().c_str(), plans_drawn);
    }
  }

  void run() {
    for (const Call& call : program) {
      std::unique_ptr<Issued> issued;
      try {
        issued = issue(call);
      } catch (const Error& error) {
        FAIL() << name(call) << " raised " << error.what();
      }
      if (issued != nullptr) {
        if (issued->works.empty()) {
          finish(*issued);
        } else {
          in_flight.push_back(std::move(issued));
        }
      }
      // Up to three in flight; the one waited for is drawn (the same on
      // every rank: waiting is local, so any order is a correct program).
      while (in_flight.size() > 3 || (!in_flight.empty() && random() % 4 == 0)) {
        const std::size_t which = random() % in_flight.size();
        try {
          finish(*in_flight[which]);
        } catch (const Error& error) {
          FAIL() << name(in_flight[which]->call) << " raised " << error.what();
        }
        in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(which));
      }
    }
    while (!in_flight.empty()) {
      finish(*in_flight.front());
      in_flight.pop_front();
    }
  }

 private:
  Communicator& communicator;
  std::uint64_t seed;
  std::mt19937_64 random;
  std::string where;
  std::vector<Call> program;
  std::vector<std::unique_ptr<PlanSlot>> plans;
  std::deque<std::unique_ptr<Issued>> in_flight;

  std::string summary() const {
    int started = 0, exchanges = 0, plan_starts = 0;
    for (const Call& call : program) {
      started += call.started ? 1 : 0;
      exchanges += call.point_to_point ? 1 : 0;
      plan_starts += call.plan == Call::PlanAction::kStart ? 1 : 0;
    }
    std::ostringstream out;
    out << started << " started, " << exchanges << " send/recv exchanges, " << plan_starts
        << " plan starts";
    return out.str();
  }

  // The rank, the program and the call, for a failure.
  std::string name(const Call& call) const {
    return "rank " + std::to_string(communicator.rank()) + " of " + where + ": " +
           describe(call, seed);
  }

  std::shared_ptr<Prepared> prepare(const Call& call) {
    auto prepared = std::make_shared<Prepared>();
    prepared->c = cases::make_collective_case(call.kind);
    const CollectiveCase& c = *prepared->c;
    const std::size_t element = element_size(call.args.type);
    const cases::Shape shape{communicator.size(), communicator.rank(), call.args.uneven};
    const Geometry geometry = c.geometry(call.args.count, element, shape);
    prepared->recv_elements = geometry.recv_elements;
    prepared->send = std::make_unique<Buffer>(
        communicator, (geometry.send_elements + call.send_shift) * element, call.shared_buffers);
    prepared->recv = std::make_unique<Buffer>(
        communicator, (geometry.recv_elements + call.recv_shift) * element, call.shared_buffers);
    CallArgs& args = prepared->args;
    args = call.args;
    args.send_base = prepared->send->data() + call.send_shift * element;
    args.recv_base = prepared->recv->data() + call.recv_shift * element;
    args.rank = communicator.rank();
    args.ranks = communicator.size();
    c.place(args);
    return prepared;
  }

  // The sentinel in the receive buffer, then this rank's inputs for `salt`.
  static void fill(const Prepared& prepared, std::uint64_t salt) {
    const CallArgs& args = prepared.args;
    cases::fill_sentinel(args.type, Region{args.recv_base, prepared.recv_elements, 0});
    const cases::ValuePattern pattern = prepared.c->pattern(args);
    for (Region input : prepared.c->inputs(args)) {
      input.first_index += salt;
      cases::fill_inputs(pattern, args.rank, input);
    }
  }

  // Runs or starts the call; null when it was a plan's creation.
  std::unique_ptr<Issued> issue(const Call& call) {
    if (call.point_to_point) return exchange(call);
    if (call.plan == Call::PlanAction::kStart) return start_plan(call);
    auto issued = std::make_unique<Issued>();
    issued->call = call;
    issued->prepared = prepare(call);
    const Prepared& prepared = *issued->prepared;
    if (call.plan == Call::PlanAction::kCreate) {
      auto slot = std::make_unique<PlanSlot>();
      slot->made_by = call;
      slot->prepared = issued->prepared;
      slot->plan.emplace(prepared.c->prepare(communicator, prepared.args));
      plans.push_back(std::move(slot));
      return nullptr;
    }
    fill(prepared, call.salt);
    if (call.started) {
      issued->works.push_back(prepared.c->start(communicator, prepared.args));
    } else {
      prepared.c->run(communicator, prepared.args);
    }
    return issued;
  }

  // A start of an earlier plan, on new inputs; its previous start is
  // checked first (a plan has one start in flight at most).
  std::unique_ptr<Issued> start_plan(const Call& call) {
    PlanSlot& slot = *plans.at(call.plan_index);
    if (slot.in_flight) {
      for (auto it = in_flight.begin(); it != in_flight.end(); ++it) {
        if ((*it)->plan != &slot) continue;
        finish(**it);
        in_flight.erase(it);
        break;
      }
    }
    auto issued = std::make_unique<Issued>();
    issued->call = slot.made_by;
    issued->call.index = call.index;
    issued->call.salt = call.salt;
    issued->call.started = true;
    issued->prepared = slot.prepared;
    issued->plan = &slot;
    fill(*slot.prepared, call.salt);
    issued->works.push_back(slot.plan->start());
    slot.in_flight = true;
    return issued;
  }

  // Both halves of a point-to-point exchange, started.
  std::unique_ptr<Issued> exchange(const Call& call) {
    auto issued = std::make_unique<Issued>();
    issued->call = call;
    issued->prepared = std::make_shared<Prepared>();
    Prepared& prepared = *issued->prepared;
    const std::size_t bytes = call.args.count * element_size(call.args.type);
    prepared.send = std::make_unique<Buffer>(communicator, bytes, false);
    prepared.recv = std::make_unique<Buffer>(communicator, bytes, false);
    const int ranks = communicator.size();
    const int to = (communicator.rank() + call.shift) % ranks;
    const int from = (communicator.rank() - call.shift + ranks) % ranks;
    cases::fill_sentinel(call.args.type, Region{prepared.recv->data(), call.args.count, 0});
    cases::fill_inputs(cases::ValuePattern::copy(call.args.type, ranks), communicator.rank(),
                       Region{prepared.send->data(), call.args.count, call.salt});
    PointToPointOptions options;
    options.tag = call.index;
    auto receive = [&] {
      issued->works.push_back(communicator.recv_async(prepared.recv->data(), call.args.count,
                                                      call.args.type, from, options));
    };
    if (call.recv_first) receive();
    if (call.blocking_send) {
      communicator.send(prepared.send->data(), call.args.count, call.args.type, to, options);
    } else {
      issued->works.push_back(communicator.send_async(prepared.send->data(), call.args.count,
                                                      call.args.type, to, options));
    }
    if (!call.recv_first) receive();
    return issued;
  }

  void finish(Issued& issued) {
    if (issued.plan != nullptr) issued.plan->in_flight = false;
    for (Work& work : issued.works) work.wait();
    const Prepared& prepared = *issued.prepared;
    if (issued.call.point_to_point) {
      const int ranks = communicator.size();
      const int from = (communicator.rank() - issued.call.shift + ranks) % ranks;
      ResultLayout layout{prepared.recv->data(),
                          {cases::ResultPart{0, issued.call.args.count, from, issued.call.salt}}};
      const WrongElements wrong =
          cases::check_result(cases::ValuePattern::copy(issued.call.args.type, ranks), layout);
      EXPECT_EQ(wrong.count, 0u) << name(issued.call) << "\n"
                                 << cases::describe_wrong(wrong, communicator.rank());
      return;
    }
    ResultLayout layout = prepared.c->result(prepared.args);
    for (cases::ResultPart& part : layout.parts) {
      if (part.from_rank != cases::kUntouched) part.first_index += issued.call.salt;
    }
    const WrongElements wrong = prepared.c->check(prepared.args, layout);
    EXPECT_EQ(wrong.count, 0u) << name(issued.call)
                               << (issued.plan != nullptr ? " (a plan's start)" : "") << "\n"
                               << cases::describe_wrong(wrong, communicator.rank());
  }
};

TEST(RandomSequenceTest, EveryResultExact) {
  Communicator world = Communicator::world();
  RandomProgram(world, env_or("COLLECTIVE_TEST_SEED", 1),
                static_cast<int>(env_or("COLLECTIVE_TEST_CALLS", 300)), "the world")
      .run();
}

// Threads, each running a program of its own on a communicator of its own
// at once (communicator.h's promise for MPI_THREAD_MULTIPLE): a copy of the
// world, the world's even and odd ranks (communicators of other sizes,
// side by side), and the world in reverse order (ranks renumbered). What
// the communicators share (the node's segment, the tuners, the flight
// recorder, a thread's scratch) is used by all at once; a result that
// crosses from one to another, or a call that waits on another's, fails.
TEST(RandomSequenceTest, ThreadsOnCommunicatorsOfTheirOwn) {
  Communicator world = Communicator::world();
  const std::uint64_t seed = env_or("COLLECTIVE_TEST_SEED", 1);
  const int calls = static_cast<int>(env_or("COLLECTIVE_TEST_CALLS", 300)) / 2;
  const int rank = world.rank();
  std::vector<Communicator> communicators;
  communicators.push_back(world.split(0, rank));
  communicators.push_back(world.split(rank % 2, rank));
  communicators.push_back(world.split(0, world.size() - rank));
  const char* names[] = {"thread 0 (a copy of the world)",
                         "thread 1 (the world's even or odd ranks)",
                         "thread 2 (the world reversed)"};
  std::vector<std::unique_ptr<RandomProgram>> programs;
  for (std::size_t t = 0; t < communicators.size(); ++t) {
    programs.push_back(
        std::make_unique<RandomProgram>(communicators[t], seed * 1000 + t, calls, names[t]));
  }
  std::vector<std::thread> threads;
  for (auto& program : programs) threads.emplace_back([&program] { program->run(); });
  for (std::thread& thread : threads) thread.join();
}

}  // namespace
}  // namespace collective
