#include "call_log.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "collective/errors.h"
#include "collective/in_tree/log.h"
#include "collective/in_tree/parameters.h"

namespace collective::pmpi {

std::atomic<int> log_level_read{-1};

int read_log_level() {
  // Read by the library's parameter reader. Logging never throws into an MPI
  // program: a malformed value logs one WARN line and leaves logging off.
  static const int level = [] {
    try {
      return static_cast<int>(integer_parameter("COLLECTIVE_PMPI_LOG", 0, 2).value_or(0));
    } catch (const InvalidArgumentError& error) {
      log_line(LogLevel::kWarn, "collective.mpi", std::string(error.cause()) + "; call log off");
      return 0;
    }
  }();
  log_level_read.store(level, std::memory_order_relaxed);
  return level;
}

namespace {

// Indexed by slot(): the blocking forms, then the MPI_I* ones.
constexpr int kSlots = kNumIntercepted * kNumForms;
struct Counts {
  std::array<long, kSlots> served{};
  std::array<long, kSlots> failed{};
  std::array<std::map<std::string, long>, kSlots> passed;  // by reason
};

std::size_t slot(Intercepted call, Form form) {
  return static_cast<std::size_t>(form) * kNumIntercepted + static_cast<std::size_t>(call);
}

std::mutex counts_mutex;
Counts counts;

}  // namespace

const char* mpi_name(Intercepted call, Form form) {
  // The names are string literals: data() is NUL-terminated.
  const auto& names = form == Form::kStarted ? kStartedNames : kInterceptedNames;
  return names[static_cast<std::size_t>(call)].data();
}

void log_served(Intercepted call, int rank, const char* algorithm, Form form) {
  if (log_level() <= 0) return;
  {
    std::lock_guard<std::mutex> lock(counts_mutex);
    ++counts.served[slot(call, form)];
  }
  if (log_level() >= 2) {
    std::fprintf(stderr, "libcollective_mpi rank %d: %s served by libcollective (%s)\n", rank,
                 mpi_name(call, form), algorithm);
  }
}

void log_failed(Intercepted call, int rank, Form form) {
  if (log_level() <= 0) return;
  {
    std::lock_guard<std::mutex> lock(counts_mutex);
    ++counts.failed[slot(call, form)];
  }
  if (log_level() >= 2) {
    std::fprintf(stderr, "libcollective_mpi rank %d: %s failed in libcollective\n", rank,
                 mpi_name(call, form));
  }
}

void log_passed(Intercepted call, int rank, const char* reason, Form form) {
  if (log_level() <= 0) return;
  {
    std::lock_guard<std::mutex> lock(counts_mutex);
    ++counts.passed[slot(call, form)][reason];
  }
  if (log_level() >= 2) {
    std::fprintf(stderr, "libcollective_mpi rank %d: %s passed to PMPI: %s\n", rank,
                 mpi_name(call, form), reason);
  }
}

void log_summary(int rank) {
  if (log_level() <= 0) return;
  std::lock_guard<std::mutex> lock(counts_mutex);
  long served_total = 0, passed_total = 0, failed_total = 0;
  std::string details;
  for (int i = 0; i < kSlots; ++i) {
    long passed = 0;
    std::string reasons;
    for (const auto& [reason, n] : counts.passed[static_cast<std::size_t>(i)]) {
      passed += n;
      reasons += (reasons.empty() ? "" : "; ") + reason + ": " + std::to_string(n);
    }
    const long served = counts.served[static_cast<std::size_t>(i)];
    const long failed = counts.failed[static_cast<std::size_t>(i)];
    served_total += served;
    passed_total += passed;
    failed_total += failed;
    if (served + passed + failed == 0) continue;
    details += std::string(" ") +
               mpi_name(static_cast<Intercepted>(i % kNumIntercepted),
                        static_cast<Form>(i / kNumIntercepted)) +
               " " + std::to_string(served) + "/" + std::to_string(passed) + "/" +
               std::to_string(failed) + (reasons.empty() ? "" : " (" + reasons + ")") + ";";
  }
  // Per function: served/passed/failed, then the reasons for passing.
  std::fprintf(stderr,
               "libcollective_mpi rank %d: summary: served %ld, passed %ld, failed %ld;%s\n", rank,
               served_total, passed_total, failed_total, details.c_str());
  counts = Counts{};
}

}  // namespace collective::pmpi
