// The strategies layer logs through libcollective's log (collective/in_tree/log.h):
// one level (COLLECTIVE_DEBUG), one line format, with the component
// "collective.distribute". The message is formatted only when its level is on.
#pragma once

#include <sstream>

#include "collective/in_tree/log.h"

#define DISTRIBUTE_LOG(level, expr)                                                  \
  do {                                                                               \
    if (::collective::log_level() >= ::collective::LogLevel::level) {                \
      std::ostringstream distribute_log_stream_;                                     \
      distribute_log_stream_ << expr;                                                \
      ::collective::log_line(::collective::LogLevel::level, "collective.distribute", \
                             distribute_log_stream_.str());                          \
    }                                                                                \
  } while (0)
