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

struct Counts {
  std::array<long, kNumIntercepted> served{};
  std::array<long, kNumIntercepted> failed{};
  std::array<std::map<std::string, long>, kNumIntercepted> passed;  // by reason
};

std::mutex counts_mutex;
Counts counts;

}  // namespace

const char* mpi_name(Intercepted call) {
  // The names are string literals: data() is NUL-terminated.
  return kInterceptedNames[static_cast<std::size_t>(call)].data();
}

void log_served(Intercepted call, int rank, const char* algorithm) {
  if (log_level() <= 0) return;
  {
    std::lock_guard<std::mutex> lock(counts_mutex);
    ++counts.served[static_cast<std::size_t>(call)];
  }
  if (log_level() >= 2) {
    std::fprintf(stderr, "libcollective_mpi rank %d: %s served by libcollective (%s)\n", rank,
                 mpi_name(call), algorithm);
  }
}

void log_failed(Intercepted call, int rank) {
  if (log_level() <= 0) return;
  {
    std::lock_guard<std::mutex> lock(counts_mutex);
    ++counts.failed[static_cast<std::size_t>(call)];
  }
  if (log_level() >= 2) {
    std::fprintf(stderr, "libcollective_mpi rank %d: %s failed in libcollective\n", rank,
                 mpi_name(call));
  }
}

void log_passed(Intercepted call, int rank, const char* reason) {
  if (log_level() <= 0) return;
  {
    std::lock_guard<std::mutex> lock(counts_mutex);
    ++counts.passed[static_cast<std::size_t>(call)][reason];
  }
  if (log_level() >= 2) {
    std::fprintf(stderr, "libcollective_mpi rank %d: %s passed to PMPI: %s\n", rank, mpi_name(call),
                 reason);
  }
}

void log_summary(int rank) {
  if (log_level() <= 0) return;
  std::lock_guard<std::mutex> lock(counts_mutex);
  long served_total = 0, passed_total = 0, failed_total = 0;
  std::string details;
  for (int i = 0; i < kNumIntercepted; ++i) {
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
    details += std::string(" ") + mpi_name(static_cast<Intercepted>(i)) + " " +
               std::to_string(served) + "/" + std::to_string(passed) + "/" +
               std::to_string(failed) + (reasons.empty() ? "" : " (" + reasons + ")") + ";";
  }
  // Per function: served/passed/failed, then the reasons for passing.
  std::fprintf(stderr,
               "libcollective_mpi rank %d: summary: served %ld, passed %ld, failed %ld;%s\n", rank,
               served_total, passed_total, failed_total, details.c_str());
  counts = Counts{};
}

}  // namespace collective::pmpi
