#include "core/trace.h"

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/env_params.h"
#include "core/log.h"
#include "core/mpi_thread_level.h"

namespace collective::internal {
namespace trace_detail {
std::atomic<bool> enabled{false};
}  // namespace trace_detail

namespace {

struct TraceEvent {
  const char* name;
  const char* category;
  std::int64_t start_ns;
  std::int64_t end_ns;
  int tid;
  char detail[96];
};

// Events are handed to the writer thread in batches of this many; a
// caller writes them itself only when the writer has fallen this many
// batches behind (memory stays bounded).
constexpr std::size_t kBatch = 4096;
constexpr std::size_t kMostBuffered = 16 * kBatch;

// The calling threads only append events; a writer thread formats and
// writes them, so a traced call does not wait for the disk.
struct TraceWriter {
  std::mutex mutex;  // guards the three below
  std::condition_variable batch_ready;
  std::vector<TraceEvent> events;   // being filled
  std::vector<TraceEvent> pending;  // handed to the writer thread
  bool open = false;
  std::mutex file_mutex;  // guards the file and the two below
  std::FILE* file = nullptr;
  bool first = true;
  std::int64_t origin_ns = 0;  // steady clock at the trace's start: ts 0
  int rank = 0;
  bool started = false;
};

TraceWriter& writer() {
  static TraceWriter* instance = new TraceWriter;  // outlives every static destructor
  return *instance;
}

std::atomic<int> g_next_tid{0};
thread_local int t_tid = -1;

int thread_id() {
  if (t_tid < 0) t_tid = g_next_tid.fetch_add(1, std::memory_order_relaxed);
  return t_tid;
}

void append_json_text(std::string& out, const char* text) {
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c == '"' || *c == '\\') out += '\\';
    if (static_cast<unsigned char>(*c) >= 0x20) out += *c;
  }
}

// Formats and writes `events`; the caller holds the file mutex.
void write_events(TraceWriter& self, const std::vector<TraceEvent>& events) {
  if (self.file == nullptr) return;
  std::string out;
  out.reserve(events.size() * 200);
  char number[128];
  for (const TraceEvent& event : events) {
    out += self.first ? "\n" : ",\n";
    self.first = false;
    out += "{\"name\":\"";
    append_json_text(out, event.name);
    out += "\",\"cat\":\"";
    append_json_text(out, event.category);
    // Microseconds since the trace started, exact to the nanosecond (a
    // Unix time in microseconds would keep only a quarter of one in a
    // double); the collective_clock metadata event places the start on
    // the Unix clock, which is how scripts/merge_traces.py aligns ranks.
    const long long start = event.start_ns - self.origin_ns;
    const long long duration = event.end_ns - event.start_ns;
    std::snprintf(number, sizeof(number), "\",\"ph\":\"X\",\"ts\":%lld.%03lld,\"dur\":%lld.%03lld",
                  start / 1000, start % 1000, duration / 1000, duration % 1000);
    out += number;
    out += ",\"pid\":" + std::to_string(self.rank) + ",\"tid\":" + std::to_string(event.tid);
    if (event.detail[0] != '\0') {
      out += ",\"args\":{\"call\":\"";
      append_json_text(out, event.detail);
      out += "\"}";
    }
    out += '}';
  }
  if (std::fwrite(out.data(), 1, out.size(), self.file) != out.size()) {
    COLLECTIVE_LOG(kWarn, "COLLECTIVE_TRACE: writing the trace failed; tracing stops");
    std::fclose(self.file);
    self.file = nullptr;
    trace_detail::enabled.store(false, std::memory_order_relaxed);
  }
}

void write_batches() {
  TraceWriter& self = writer();
  std::vector<TraceEvent> batch;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(self.mutex);
      self.batch_ready.wait(lock, [&] { return !self.pending.empty(); });
      batch.swap(self.pending);
    }
    {
      const std::lock_guard<std::mutex> lock(self.file_mutex);
      write_events(self, batch);
    }
    batch.clear();
  }
}

void finish_at_exit() { finish_trace(); }

}  // namespace

std::int64_t trace_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

void start_trace_if_requested() {
  const std::string& directory = env_params().trace_dir;
  if (directory.empty()) return;
  TraceWriter& self = writer();
  // Communicator creation calls this, from any thread; the file mutex
  // keeps creations and the writer thread apart.
  const std::lock_guard<std::mutex> lock(self.file_mutex);
  if (self.started) return;
  self.started = true;
  {
    const MpiLock mpi_lock;
    MPI_Comm_rank(MPI_COMM_WORLD, &self.rank);
  }
  const std::string path = directory + "/collective_trace." + std::to_string(self.rank) + ".json";
  self.file = std::fopen(path.c_str(), "w");
  if (self.file == nullptr) {
    COLLECTIVE_LOG(kWarn, "COLLECTIVE_TRACE: cannot write " << path << ": " << std::strerror(errno)
                                                            << "; no trace");
    return;
  }
  self.origin_ns = trace_now_ns();
  const long long unix_origin_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count();
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  // The JSON array form of the trace-event format: metadata names the
  // process after the rank; the closing bracket comes at exit (a viewer
  // also opens a file cut short by a crash).
  std::fprintf(self.file,
               "[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d "
               "(pid %d on %s)\"}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,"
               "\"args\":{\"sort_index\":%d}},\n{\"name\":\"collective_clock\",\"ph\":\"M\","
               "\"pid\":%d,\"args\":{\"unix_ns_at_ts_0\":%lld}}",
               self.rank, self.rank, static_cast<int>(getpid()), host, self.rank, self.rank,
               self.rank, unix_origin_ns);
  self.first = false;
  self.events.reserve(kBatch);
  {
    const std::lock_guard<std::mutex> events_lock(self.mutex);
    self.open = true;
  }
  std::thread(write_batches).detach();
  std::atexit(finish_at_exit);
  trace_detail::enabled.store(true, std::memory_order_release);
}

void trace_slice(const char* name, const char* category, std::int64_t start_ns, std::int64_t end_ns,
                 const char* detail) {
  TraceWriter& self = writer();
  const int tid = thread_id();
  std::unique_lock<std::mutex> lock(self.mutex);
  if (!self.open) return;
  TraceEvent& event = self.events.emplace_back();
  event.name = name;
  event.category = category;
  event.start_ns = start_ns;
  event.end_ns = end_ns;
  event.tid = tid;
  event.detail[0] = '\0';
  if (detail != nullptr) std::snprintf(event.detail, sizeof(event.detail), "%s", detail);
  if (self.events.size() < kBatch) return;
  if (self.pending.empty()) {
    self.pending.swap(self.events);
    self.batch_ready.notify_one();
  } else if (self.events.size() >= kMostBuffered) {
    std::vector<TraceEvent> batch;
    batch.swap(self.events);
    lock.unlock();
    const std::lock_guard<std::mutex> file_lock(self.file_mutex);
    write_events(self, batch);
  }
}

void finish_trace() {
  TraceWriter& self = writer();
  std::vector<TraceEvent> pending, events;
  {
    const std::lock_guard<std::mutex> lock(self.mutex);
    if (!self.open) return;
    self.open = false;
    pending.swap(self.pending);
    events.swap(self.events);
  }
  // After the batch the writer thread may be writing now.
  const std::lock_guard<std::mutex> file_lock(self.file_mutex);
  write_events(self, pending);
  write_events(self, events);
  if (self.file == nullptr) return;
  std::fputs("\n]\n", self.file);
  std::fclose(self.file);
  self.file = nullptr;
  trace_detail::enabled.store(false, std::memory_order_relaxed);
}

}  // namespace collective::internal
