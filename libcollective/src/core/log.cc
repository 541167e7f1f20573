#include "core/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "core/env_params.h"

namespace collective {
namespace {

std::atomic<int> g_log_rank{-1};

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kTrace: return "TRACE";
    case LogLevel::kNone:
    default: return "";
  }
}

}  // namespace

LogLevel log_level() {
  // A malformed COLLECTIVE_* variable is raised by the call that made the
  // communicator (env_params()); logging never throws, it stays at WARN.
  static const LogLevel level = [] {
    try {
      return internal::env_params().log_level;
    } catch (...) {
      return LogLevel::kWarn;
    }
  }();
  return level;
}

void log_line(LogLevel level, std::string_view component, std::string_view message) {
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  // One fprintf per line keeps lines from different threads whole.
  std::fprintf(stderr, "[%.*s %s rank %d %s] %.*s\n", static_cast<int>(component.size()),
               component.data(), level_name(level), g_log_rank.load(), host,
               static_cast<int>(message.size()), message.data());
}

namespace internal {

void set_log_rank(int rank) { g_log_rank.store(rank); }

void log_line(LogLevel level, const std::string& message) {
  ::collective::log_line(level, "collective", message);
}

}  // namespace internal
}  // namespace collective
