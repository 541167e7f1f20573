// The library's own use of the public log (collective/in_tree/log.h): the
// COLLECTIVE_LOG macro, whose message is formatted only when its level is on.
#pragma once

#include <sstream>
#include <string>

#include "collective/in_tree/log.h"

namespace collective::internal {

using ::collective::log_level;
using ::collective::LogLevel;

void log_line(LogLevel level, const std::string& message);

// Ranks are filled in once known (world rank), for the prefix.
void set_log_rank(int rank);

}  // namespace collective::internal

#define COLLECTIVE_LOG(level, expr)                                   \
  do {                                                                \
    if (::collective::log_level() >= ::collective::LogLevel::level) { \
      std::ostringstream collective_log_stream_;                      \
      collective_log_stream_ << expr;                                 \
      ::collective::internal::log_line(::collective::LogLevel::level, \
                                       collective_log_stream_.str()); \
    }                                                                 \
  } while (0)
