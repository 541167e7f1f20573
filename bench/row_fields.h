// Rows as flat named fields: the one definition of the JSON and CSV
// columns (docs/bench.md lists them).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "results.h"

namespace collective::bench {

using FieldValue =
    std::variant<std::monostate, std::string, double, std::int64_t, std::uint64_t, bool>;

struct Field {
  std::string name;
  FieldValue value;
};

// One record per measured placement of a size row (out-of-place, in-place).
std::vector<std::vector<Field>> flatten(const SizeRow& row);
std::vector<Field> flatten(const FusionRow& row);

// Every column a record can have, in CSV order.
const std::vector<std::string>& csv_columns();

}  // namespace collective::bench
