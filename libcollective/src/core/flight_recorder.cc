#include "core/flight_recorder.h"

#include <fcntl.h>
#include <time.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#include "collective/errors.h"
#include "collective/in_tree/collectives.h"
#include "core/env_params.h"
#include "core/log.h"
#include "core/mpi_thread_level.h"

namespace collective::internal {
namespace {

// Format of the dump; a reader refuses another major version.
constexpr int kFlightRecordFormatVersion = 1;

std::int64_t steady_ns(Clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

// Bumped by the SIGUSR1 handler (lock-free, so async-signal-safe).
std::atomic<std::uint32_t> g_dump_requests{0};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
// The handler wakes the watcher through this pipe (write is
// async-signal-safe); -1 until the watcher runs.
int g_wake_pipe[2] = {-1, -1};

void on_sigusr1(int) {
  const int saved = errno;
  g_dump_requests.fetch_add(1, std::memory_order_relaxed);
  if (g_wake_pipe[1] >= 0) {
    const char byte = 1;
    [[maybe_unused]] const ssize_t written = write(g_wake_pipe[1], &byte, 1);
  }
  errno = saved;
}

// The process's recorders, for dumps; the process's identity.
struct RecorderRegistry {
  std::mutex mutex;
  std::vector<std::weak_ptr<FlightRecorder>> recorders;
  std::map<std::vector<int>, int> made_with_members;
  int world_rank = -1;
  int world_size = 0;
  std::string host;
  bool watcher_started = false;
};

RecorderRegistry& recorder_registry() {
  static RecorderRegistry* instance =
      new RecorderRegistry;  // never destroyed: dumps may run at exit
  return *instance;
}

// The world rank names the file; MPI is running whenever this is called.
void learn_process_locked(RecorderRegistry& self) {
  if (self.world_rank >= 0) return;
  const MpiLock mpi_lock;
  MPI_Comm_rank(MPI_COMM_WORLD, &self.world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &self.world_size);
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  self.host.assign(name, static_cast<std::size_t>(length));
}

void watch_for_sigusr1() {
  for (;;) {
    char bytes[64];
    const ssize_t got = read(g_wake_pipe[0], bytes, sizeof(bytes));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;
    // A call waiting in the library notes what it waits for within about
    // 1 ms (its wait loop looks at the request after every yield or sleep
    // slice); give it a few before reading the records.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    dump_flight_records_noexcept("SIGUSR1");
  }
}

// COLLECTIVE_FLIGHT_RECORDER_SIGNAL's value when the variable is unset.
std::atomic<bool> g_signal_by_default{true};

// With the first recorder: SIGUSR1 dumps, unless the program handles
// SIGUSR1 itself (then its handler is kept and this is logged) or
// COLLECTIVE_FLIGHT_RECORDER_SIGNAL (or the embedder's default) says not
// to take it: then no handler and no watcher thread.
void start_watcher_locked(RecorderRegistry& self) {
  if (self.watcher_started) return;
  self.watcher_started = true;
  if (!env_params().flight_recorder_signal.value_or(g_signal_by_default.load())) return;
  struct sigaction current {};
  if (sigaction(SIGUSR1, nullptr, &current) != 0) return;
  const bool default_action = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL;
  if (!default_action) {
    COLLECTIVE_LOG(kInfo,
                   "SIGUSR1 already has a handler: the flight recorder does not take it "
                   "(collective::dump_flight_record() still dumps on demand)");
    return;
  }
  if (pipe2(g_wake_pipe, O_CLOEXEC) != 0) return;
  std::thread(watch_for_sigusr1).detach();
  struct sigaction action {};
  action.sa_handler = on_sigusr1;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &action, nullptr);
}

void append_escaped(std::string& out, const char* text, std::size_t length) {
  out += '"';
  for (std::size_t i = 0; i < length; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char code[8];
      std::snprintf(code, sizeof(code), "\\u%04x", c);
      out += code;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void append_string(std::string& out, std::string_view text) {
  append_escaped(out, text.data(), text.size());
}

void append_seconds(std::string& out, std::int64_t unix_ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6f", static_cast<double>(unix_ns) / 1e9);
  out += text;
}

void append_ranks(std::string& out, const std::vector<int>& ranks) {
  out += '[';
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ranks[i]);
  }
  out += ']';
}

bool records_op(CollectiveKind kind) { return traits_of(kind).reduces; }
bool records_root(CollectiveKind kind) { return traits_of(kind).rooted; }

const char* state_name(CallState state) {
  switch (state) {
    case CallState::kStarted: return "started";
    case CallState::kFinished: return "finished";
    case CallState::kFailed: return "failed";
    case CallState::kQueued: return "queued";
    case CallState::kEmpty: break;
  }
  return "empty";
}

// What a dump reads of one record.
struct RecordCopy {
  CallState state;
  Algorithm algorithm, requested;
  CollectiveKind kind;
  DataType type;
  ReduceOp op;
  bool creates_plan;
  std::int32_t root;
  std::uint64_t sequence, count;
  std::int64_t start_ns, end_ns, queued_ns;
};

// A consistent copy of `record`, or false when begin() keeps rewriting it.
bool snapshot(const FlightRecord& record, RecordCopy& copy) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::uint32_t before = record.version.load(std::memory_order_acquire);
    if (before & 1u) {
      std::this_thread::yield();
      continue;
    }
    copy.kind = record.kind.load(std::memory_order_relaxed);
    copy.type = record.type.load(std::memory_order_relaxed);
    copy.op = record.op.load(std::memory_order_relaxed);
    copy.creates_plan = record.creates_plan.load(std::memory_order_relaxed);
    copy.root = record.root.load(std::memory_order_relaxed);
    copy.sequence = record.sequence.load(std::memory_order_relaxed);
    copy.count = record.count.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (record.version.load(std::memory_order_relaxed) != before) continue;
    copy.state = record.state.load(std::memory_order_acquire);
    copy.algorithm = record.algorithm.load(std::memory_order_relaxed);
    copy.requested = record.requested.load(std::memory_order_relaxed);
    copy.start_ns = record.start_ns.load(std::memory_order_relaxed);
    copy.end_ns = record.end_ns.load(std::memory_order_relaxed);
    copy.queued_ns = record.queued_ns.load(std::memory_order_relaxed);
    return true;
  }
  return false;
}

constexpr std::size_t kFailureNotes = 8;

}  // namespace

FlightRecorder::FlightRecorder(std::size_t capacity, CommunicatorIdentity identity)
    : identity_(std::move(identity)), records_(capacity) {}

namespace {

bool in_flight(CallState state) {
  return state == CallState::kQueued || state == CallState::kStarted;
}

// Every field but the version, for a call in `state`.
void fill(FlightRecord& record, const Request& request, CallState state, std::int64_t queued_ns,
          bool creates_plan = false) {
  record.state.store(state, std::memory_order_relaxed);
  record.algorithm.store(Algorithm::kAuto, std::memory_order_relaxed);
  record.requested.store(request.requested, std::memory_order_relaxed);
  record.kind.store(request.kind, std::memory_order_relaxed);
  record.type.store(request.type, std::memory_order_relaxed);
  record.op.store(request.op, std::memory_order_relaxed);
  record.creates_plan.store(creates_plan, std::memory_order_relaxed);
  record.root.store(request.root, std::memory_order_relaxed);
  record.sequence.store(request.sequence, std::memory_order_relaxed);
  record.count.store(request.count, std::memory_order_relaxed);
  record.start_ns.store(0, std::memory_order_relaxed);
  record.end_ns.store(0, std::memory_order_relaxed);
  record.queued_ns.store(queued_ns, std::memory_order_relaxed);
}

// Makes the version odd for this thread alone (the caller's thread queuing
// a call and the thread running an earlier one may both want the slot
// when more calls are in flight than the ring holds). Returns the even
// version it found; the record's fields are this thread's until release.
std::uint32_t claim(FlightRecord& record) {
  std::uint32_t version = record.version.load(std::memory_order_relaxed);
  for (;;) {
    if (version & 1u) {
      std::this_thread::yield();
      version = record.version.load(std::memory_order_relaxed);
    } else if (record.version.compare_exchange_weak(version, version + 1, std::memory_order_acquire,
                                                    std::memory_order_relaxed)) {
      std::atomic_thread_fence(std::memory_order_release);
      return version;
    }
  }
}

// Ends a claim: a new version when the fields changed, else the old one
// (a reader's copy taken meanwhile is still consistent).
void release(FlightRecord& record, std::uint32_t version, bool changed) {
  record.version.store(changed ? version + 2 : version, std::memory_order_release);
}

}  // namespace

FlightRecord& FlightRecorder::begin(const Request& request, bool creates_plan) {
  // Nothing is in flight (a blocking call first waits for the queue to
  // empty): this thread is the record's only writer, no atomic exchange.
  FlightRecord& record = records_[request.sequence % records_.size()];
  const std::uint32_t version = record.version.load(std::memory_order_relaxed);
  record.version.store(version + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  fill(record, request, CallState::kStarted, 0, creates_plan);
  record.version.store(version + 2, std::memory_order_release);
  started_.store(request.sequence + 1, std::memory_order_release);
  return record;
}

void FlightRecorder::queue(const Request& request) {
  FlightRecord& record = records_[request.sequence % records_.size()];
  const std::uint32_t version = claim(record);
  // A call still queued or running keeps its record: it is the one a dump
  // on its failure must show.
  const bool taken = in_flight(record.state.load(std::memory_order_acquire));
  if (!taken) fill(record, request, CallState::kQueued, coarse_now_ns());
  release(record, version, !taken);
  if (taken) not_recorded_.fetch_add(1, std::memory_order_relaxed);
  // Only the thread that issues calls (in program order) moves this.
  started_.store(request.sequence + 1, std::memory_order_release);
}

FlightRecord* FlightRecorder::begin_queued(const Request& request) {
  FlightRecord& record = records_[request.sequence % records_.size()];
  const std::uint32_t version = claim(record);
  const CallState held = record.state.load(std::memory_order_acquire);
  if (held == CallState::kQueued &&
      record.sequence.load(std::memory_order_relaxed) == request.sequence) {
    record.state.store(CallState::kStarted, std::memory_order_relaxed);
  } else if (in_flight(held)) {
    release(record, version, false);  // a later call's, queued meanwhile
    return nullptr;
  } else {
    // Its queued record was never written (the slot was another call's
    // in flight then): recorded from its start, queue time unknown.
    fill(record, request, CallState::kStarted, 0);
  }
  release(record, version, true);
  return &record;
}

void FlightRecorder::fail(FlightRecord& record, const char* why) {
  const std::int64_t now = steady_ns(Clock::now());
  {
    const std::lock_guard<std::mutex> lock(wait_mutex_);
    if (failures_.size() == kFailureNotes) failures_.erase(failures_.begin());
    failures_.push_back(FailureNote{record.sequence.load(std::memory_order_relaxed), why});
  }
  if (record.start_ns.load(std::memory_order_relaxed) == 0) {
    record.start_ns.store(now, std::memory_order_relaxed);  // refused before it started
  }
  record.end_ns.store(now, std::memory_order_relaxed);
  record.state.store(CallState::kFailed, std::memory_order_release);
}

void FlightRecorder::note_lost(const std::vector<int>& ranks) {
  const std::int64_t now = steady_ns(Clock::now());
  const std::lock_guard<std::mutex> lock(wait_mutex_);
  if (loss_.at_ns == 0) loss_.at_ns = now;
  for (const int rank : ranks) {
    if (rank < 0 || static_cast<std::size_t>(rank) >= identity_.members.size()) continue;
    const int world = identity_.members[static_cast<std::size_t>(rank)];
    if (std::find(loss_.ranks.begin(), loss_.ranks.end(), world) == loss_.ranks.end()) {
      loss_.ranks.push_back(world);
    }
  }
  std::sort(loss_.ranks.begin(), loss_.ranks.end());
}

void FlightRecorder::note_shrink(const std::string& into, double agreed_ms, double made_ms) {
  const std::int64_t now = steady_ns(Clock::now());
  const std::lock_guard<std::mutex> lock(wait_mutex_);
  loss_.shrunk_into = into;
  loss_.shrunk_at_ns = now;
  loss_.agreed_ms = agreed_ms;
  loss_.made_ms = made_ms;
}

std::string FlightRecorder::id() const {
  std::string id = "[";
  for (std::size_t i = 0; i < identity_.members.size(); ++i) {
    if (i > 0) id += ',';
    id += std::to_string(identity_.members[i]);
  }
  return id + "]#" + std::to_string(identity_.ordinal);
}

void FlightRecorder::note_wait(std::uint64_t sequence, const char* phase,
                               const std::vector<int>& ranks, const std::string& what) {
  const std::lock_guard<std::mutex> lock(wait_mutex_);
  wait_.sequence = sequence;
  wait_.phase = phase;
  wait_.ranks = ranks;
  wait_.what = what;
  wait_.valid = true;
}

void FlightRecorder::write_json(std::string& out, std::int64_t steady_to_unix_ns) const {
  out += "{\"id\":";
  append_string(out, id());
  out += ",\"origin\":";
  append_string(out, identity_.origin);
  if (!identity_.shrunk_from.empty()) {
    out += ",\"shrunk_from\":";
    append_string(out, identity_.shrunk_from);
  }
  out += ",\"members\":";
  append_ranks(out, identity_.members);
  out += ",\"rank\":" + std::to_string(identity_.rank) +
         ",\"size\":" + std::to_string(identity_.size) +
         ",\"capacity\":" + std::to_string(records_.size()) +
         ",\"calls_started\":" + std::to_string(started_.load(std::memory_order_relaxed)) +
         ",\"not_recorded\":" + std::to_string(not_recorded_.load(std::memory_order_relaxed));
  out += ",\"waiting\":";
  {
    const std::lock_guard<std::mutex> lock(wait_mutex_);
    if (wait_.valid) {
      out += "{\"sequence\":" + std::to_string(wait_.sequence) + ",\"phase\":";
      append_string(out, wait_.phase);
      out += ",\"ranks\":";
      append_ranks(out, wait_.ranks);
      out += ",\"what\":";
      append_string(out, wait_.what);
      out += '}';
    } else {
      out += "null";
    }
  }
  {
    // Which ranks it lost and when; the shrink of it (docs/errors.md).
    const std::lock_guard<std::mutex> lock(wait_mutex_);
    if (loss_.at_ns != 0) {
      out += ",\"lost\":{\"ranks\":";
      append_ranks(out, loss_.ranks);
      out += ",\"at\":";
      append_seconds(out, loss_.at_ns + steady_to_unix_ns);
      out += '}';
    }
    if (loss_.shrunk_at_ns != 0) {
      out += ",\"shrunk_into\":{\"id\":";
      append_string(out, loss_.shrunk_into);
      out += ",\"at\":";
      append_seconds(out, loss_.shrunk_at_ns + steady_to_unix_ns);
      char times[96];
      std::snprintf(times, sizeof(times), ",\"agreed_ms\":%.3f,\"made_ms\":%.3f}", loss_.agreed_ms,
                    loss_.made_ms);
      out += times;
    }
  }
  // Oldest first: the ring holds sequence numbers [started - capacity, started).
  const std::uint64_t started = started_.load(std::memory_order_acquire);
  const std::uint64_t first = started > records_.size() ? started - records_.size() : 0;
  out += ",\"calls\":[";
  bool any = false;
  for (std::uint64_t sequence = first; sequence < started; ++sequence) {
    RecordCopy copy;
    if (!snapshot(records_[sequence % records_.size()], copy)) continue;
    if (copy.state == CallState::kEmpty || copy.sequence != sequence) continue;
    out += any ? ",\n  " : "\n  ";
    any = true;
    out += "{\"seq\":" + std::to_string(copy.sequence) + ",\"collective\":";
    append_string(out, std::string(to_string(copy.kind)) + (copy.creates_plan ? "_init" : ""));
    out += ",\"count\":" + std::to_string(copy.count) + ",\"dtype\":";
    append_string(out, to_string(copy.type));
    if (records_op(copy.kind)) {
      out += ",\"op\":";
      append_string(out, to_string(copy.op));
    }
    if (records_root(copy.kind)) out += ",\"root\":" + std::to_string(copy.root);
    out += ",\"algorithm\":";
    append_string(out, copy.algorithm == Algorithm::kAuto ? "none" : to_string(copy.algorithm));
    out += ",\"requested\":";
    append_string(out, to_string(copy.requested));
    out += ",\"state\":";
    append_string(out, state_name(copy.state));
    if (copy.queued_ns != 0) {
      out += ",\"queued\":";
      append_seconds(out, copy.queued_ns + steady_to_unix_ns);
    }
    out += ",\"start\":";
    if (copy.start_ns != 0) {
      append_seconds(out, copy.start_ns + steady_to_unix_ns);
    } else {
      out += "null";
    }
    out += ",\"end\":";
    if (copy.end_ns != 0) {
      append_seconds(out, copy.end_ns + steady_to_unix_ns);
    } else {
      out += "null";
    }
    if (copy.state == CallState::kFailed) {
      const std::lock_guard<std::mutex> lock(wait_mutex_);
      for (const FailureNote& note : failures_) {
        if (note.sequence != copy.sequence) continue;
        out += ",\"why\":";
        append_string(out, note.why);
      }
    }
    out += '}';
  }
  out += "]}";
}

std::shared_ptr<FlightRecorder> make_flight_recorder(CommunicatorIdentity identity) {
  const std::size_t capacity = env_params().flight_recorder_calls;
  if (capacity == 0) return nullptr;
  RecorderRegistry& self = recorder_registry();
  const std::lock_guard<std::mutex> lock(self.mutex);
  learn_process_locked(self);
  identity.ordinal = self.made_with_members[identity.members]++;
  auto recorder = std::make_shared<FlightRecorder>(capacity, std::move(identity));
  std::erase_if(self.recorders, [](const auto& weak) { return weak.expired(); });
  self.recorders.push_back(recorder);
  start_watcher_locked(self);
  return recorder;
}

void set_signal_default(bool dump_on_sigusr1) { g_signal_by_default.store(dump_on_sigusr1); }

std::uint32_t dump_request_generation() { return g_dump_requests.load(std::memory_order_relaxed); }

std::string dump_flight_records(const std::string& directory, const std::string& reason) {
  RecorderRegistry& self = recorder_registry();
  const std::lock_guard<std::mutex> lock(self.mutex);
  learn_process_locked(self);
  std::string folder = !directory.empty() ? directory : env_params().flight_recorder_dir;
  if (folder.empty()) folder = ".";
  const std::string path =
      folder + "/collective_flight_record." + std::to_string(self.world_rank) + ".json";
  const auto unix_now = std::chrono::system_clock::now();
  const auto steady_now = Clock::now();
  const std::int64_t steady_to_unix_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(unix_now.time_since_epoch()).count() -
      steady_ns(steady_now);
  std::string out = "{\"format\":\"collective-flight-record\",\"version\":" +
                    std::to_string(kFlightRecordFormatVersion) + ",\n\"reason\":";
  append_string(out, reason);
  out += ",\n\"world_rank\":" + std::to_string(self.world_rank) +
         ",\"world_size\":" + std::to_string(self.world_size) +
         ",\"pid\":" + std::to_string(getpid()) + ",\"host\":";
  append_string(out, self.host);
  out += ",\"dumped_at\":";
  append_seconds(out, steady_ns(steady_now) + steady_to_unix_ns);
  out += ",\n\"communicators\":[";
  bool any = false;
  for (const auto& weak : self.recorders) {
    const std::shared_ptr<FlightRecorder> recorder = weak.lock();
    if (!recorder) continue;
    out += any ? ",\n" : "\n";
    any = true;
    recorder->write_json(out, steady_to_unix_ns);
  }
  out += "]}\n";
  const std::string temporary = path + ".tmp" + std::to_string(getpid());
  std::FILE* file = std::fopen(temporary.c_str(), "w");
  bool written = file != nullptr && std::fwrite(out.data(), 1, out.size(), file) == out.size();
  if (file != nullptr) written = (std::fclose(file) == 0) && written;
  if (!written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string cause = std::strerror(errno);
    std::remove(temporary.c_str());
    throw CommunicationError("dump_flight_record", self.world_rank,
                             "cannot write the flight record to " + path + ": " + cause);
  }
  return path;
}

void dump_flight_records_noexcept(const std::string& reason) {
  try {
    const std::string path = dump_flight_records("", reason);
    COLLECTIVE_LOG(kWarn, "flight record written to " << path << " (" << reason << ")");
  } catch (const std::exception& error) {
    COLLECTIVE_LOG(kWarn, error.what());
  } catch (...) {
  }
}

}  // namespace collective::internal
