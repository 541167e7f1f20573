// The collective cases (cases/: geometry, inputs, expected results and
// checks, shared with the tests' sweep), under the benchmark's namespace.
#pragma once

#include "collective_case.h"
#include "value_pattern.h"

namespace collective::bench {

using cases::CallArgs;
using cases::CollectiveCase;
using cases::Geometry;
using cases::Region;
using cases::ResultLayout;
using cases::ValuePattern;
using cases::WrongElements;

using cases::check_reduction;
using cases::command_line_name;
using cases::corrupt_element;
using cases::fill_inputs;
using cases::fill_sentinel;
using cases::fill_timing_values;
using cases::has_per_rank_counts;
using cases::kinds_with_cases;
using cases::make_collective_case;
using cases::parse_case_name;

}  // namespace collective::bench
