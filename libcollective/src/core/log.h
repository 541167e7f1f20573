// Leveled logging to stderr, prefixed with rank and host. The level comes
// from COLLECTIVE_DEBUG (WARN by default; INFO, DEBUG, TRACE, or NONE).
#pragma once

#include <sstream>
#include <string>

namespace collective::internal {

enum class LogLevel : int { kNone = 0, kWarn, kInfo, kDebug, kTrace };

LogLevel log_level();
void log_line(LogLevel level, const std::string& message);

// Ranks are filled in once known (world rank), for the prefix.
void set_log_rank(int rank);

}  // namespace collective::internal

#define COLLECTIVE_LOG(level, expr)                                                  \
  do {                                                                               \
    if (::collective::internal::log_level() >= ::collective::internal::LogLevel::level) { \
      std::ostringstream collective_log_stream_;                                     \
      collective_log_stream_ << expr;                                                \
      ::collective::internal::log_line(::collective::internal::LogLevel::level,      \
                                       collective_log_stream_.str());                \
    }                                                                                \
  } while (0)
