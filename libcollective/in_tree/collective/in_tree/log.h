// The library's leveled log, shared by every layer built on it (the
// strategies, the benchmark, tools): one level, one line format, one stream.
// The level comes from COLLECTIVE_DEBUG, read once: NONE, WARN (the default),
// INFO, DEBUG or TRACE (or 0-4). Lines read
//   "[<component> <LEVEL> rank <r> <host>] <message>"
// where the rank is the process's rank in MPI_COMM_WORLD once a communicator
// was made (-1 before).
#pragma once

#include <string_view>

#include "collective/in_tree/export.h"

namespace collective {

enum class LogLevel : int { kNone = 0, kWarn, kInfo, kDebug, kTrace };

// The level in force. A malformed COLLECTIVE_DEBUG is raised by the call
// that makes a communicator; logging itself never throws and stays at WARN.
COLLECTIVE_IN_TREE_API LogLevel log_level();

// Writes one line to stderr with one write, so that lines of different
// threads stay whole. Callers check log_level() first (formatting a message
// nobody reads costs more than the check).
COLLECTIVE_IN_TREE_API void log_line(LogLevel level, std::string_view component,
                                     std::string_view message);

}  // namespace collective
