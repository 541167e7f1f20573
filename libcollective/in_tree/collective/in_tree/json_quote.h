// JSON string literals, for everything that writes JSON beside the library
// (the benchmark's reports, tools): the library's own writer, so that one
// escaping rule holds everywhere (quote, backslash, control characters as
// \n \r \t or \u00XX; other bytes, UTF-8 included, unchanged).
#pragma once

#include <string>
#include <string_view>

#include "collective/in_tree/export.h"

namespace collective {

// `text` as a JSON string literal, quotes included.
COLLECTIVE_IN_TREE_API std::string json_quote(std::string_view text);

}  // namespace collective
