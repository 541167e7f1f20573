#include "log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "collective/environment.h"

namespace collective::distribute::detail {
namespace {

std::atomic<int> g_worker{0};

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kTrace: return "TRACE";
    case LogLevel::kNone: break;
  }
  return "";
}

}  // namespace

LogLevel log_level() {
  // libcollective parses COLLECTIVE_DEBUG; a malformed value is raised by
  // its calls, while logging stays at WARN and never throws.
  static const LogLevel level = [] {
    try {
      return static_cast<LogLevel>(Environment::log_level());
    } catch (...) {
      return LogLevel::kWarn;
    }
  }();
  return level;
}

void set_log_worker(int worker) { g_worker.store(worker); }

void log_line(LogLevel level, const std::string& message) {
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  // One fprintf per line keeps lines of different replica threads whole.
  std::fprintf(stderr, "[collective.distribute %s worker %d %s] %s\n", level_name(level),
               g_worker.load(), host, message.c_str());
}

}  // namespace collective::distribute::detail
