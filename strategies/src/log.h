// Leveled log lines to stderr for the strategies layer. The level comes from
// COLLECTIVE_DEBUG, read once, with libcollective's meaning (NONE, WARN - the
// default -, INFO, DEBUG, TRACE); lines read
// "[collective.distribute WARN worker 1 host] message".
#pragma once

#include <sstream>
#include <string>

namespace collective::distribute::detail {

enum class LogLevel : int { kNone = 0, kWarn, kInfo, kDebug, kTrace };

LogLevel log_level();
void log_line(LogLevel level, const std::string& message);
// The worker index shown in the prefix (set by multi-worker strategies).
void set_log_worker(int worker);

}  // namespace collective::distribute::detail

#define DISTRIBUTE_LOG(level, expr)                                                         \
  do {                                                                                      \
    if (::collective::distribute::detail::log_level() >=                                    \
        ::collective::distribute::detail::LogLevel::level) {                                \
      std::ostringstream distribute_log_stream_;                                            \
      distribute_log_stream_ << expr;                                                       \
      ::collective::distribute::detail::log_line(::collective::distribute::detail::LogLevel::level, \
                                                 distribute_log_stream_.str());             \
    }                                                                                       \
  } while (0)
