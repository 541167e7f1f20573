// The collectives that have a case, and their names on a command line, from
// the library's table of collectives alone: what a parser needs (the bench's
// -C, its fuzzer) without the cases' code.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "collective/algorithm.h"

namespace collective::cases {

// Every collective with a case, in the table's order.
std::span<const CollectiveKind> kinds_with_cases();

// The name on a command line: nccl-tests' where it has one, else the
// library's.
std::string_view command_line_name(CollectiveKind kind);

// The kind named by the library's name ("all_to_all_v"), nccl-tests' name
// ("alltoall") or the library's without underscores ("gatherv").
std::optional<CollectiveKind> parse_case_name(std::string_view name);

// Whether its counts differ by rank (the v-forms: --uneven applies).
bool has_per_rank_counts(CollectiveKind kind);

}  // namespace collective::cases
