// The library's reader of COLLECTIVE_* environment variables, for the layers
// built on it (the strategies layer, the MPI drop-in, tools): one syntax and
// one error for every variable, the library's own (docs/parameters.md).
// Each call reads the environment afresh. An unset or empty variable gives
// std::nullopt; a malformed one raises InvalidArgumentError whose message
// reads "NAME=value is not <what is expected>".
#pragma once

#include <cstddef>
#include <optional>

#include "collective/in_tree/export.h"

namespace collective {

// A plain decimal number of seconds in (0, max_seconds] ("3s", "inf" or
// "-1" are errors).
COLLECTIVE_IN_TREE_API std::optional<double> seconds_parameter(const char* name,
                                                               double max_seconds);

// A decimal integer in [minimum, maximum]: digits only, no sign, space or
// suffix (so "2x" or " 2" is an error rather than a silent 2).
COLLECTIVE_IN_TREE_API std::optional<long long> integer_parameter(const char* name,
                                                                  long long minimum,
                                                                  long long maximum);

// A byte count in [minimum, maximum], digits with an optional K, M or G
// suffix (powers of 1024).
COLLECTIVE_IN_TREE_API std::optional<std::size_t> bytes_parameter(const char* name,
                                                                  std::size_t minimum,
                                                                  std::size_t maximum);

// A switch: 1/on/true/yes or 0/off/false/no.
COLLECTIVE_IN_TREE_API std::optional<bool> switch_parameter(const char* name);

}  // namespace collective
