#include "log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace collective::distribute::detail {
namespace {

LogLevel parse_level(const char* text) {
  if (text == nullptr || *text == '\0') return LogLevel::kWarn;
  const std::string_view value(text);
  if (value == "NONE" || value == "none" || value == "0") return LogLevel::kNone;
  if (value == "WARN" || value == "warn") return LogLevel::kWarn;
  if (value == "INFO" || value == "info" || value == "1") return LogLevel::kInfo;
  if (value == "DEBUG" || value == "debug" || value == "2") return LogLevel::kDebug;
  if (value == "TRACE" || value == "trace" || value == "3") return LogLevel::kTrace;
  // libcollective reports the malformed value itself; stay at the default.
  return LogLevel::kWarn;
}

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
  static const LogLevel level = parse_level(std::getenv("COLLECTIVE_DEBUG"));
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
